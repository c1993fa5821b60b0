"""Failure messages in Python source, found with the `ast` module.

Shared by the catalogs whose emitter is Python code (torchelastic, DataLoader, distributed
checkpoint, the Python side of c10d). It finds what a module raises (`raise X(...)`), logs at
warning level or above (`logger.warning/error/exception/critical(...)`) and warns
(`warnings.warn(...)`), and returns each message's format text exactly as the source writes it:

- a plain string is `literal`;
- an f-string keeps its literal parts and writes each `{expr}` as the expression's source
  (`fstring`);
- `"..." % args` is `printf`; `"...{}...".format(...)` is `brace`;
- `a + b` of strings and f-strings joins the parts, a non-string operand becoming `{expr}`;
- a bare name (`raise RuntimeError(msg)`) is resolved to the last assignment of that name in the
  same function, when that assignment is one of the forms above;
- a helper that raises for its caller (DDP's `self._log_and_throw(ValueError, "...")`) is read
  like a raise when the caller names it in `throwers`: the helper's name -> the positions of its
  exception type and message arguments.

Nothing is decided here about what a message means; that is the mapping's job.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

LOG_METHODS = {
    "warning": "WARNING",
    "warn": "WARNING",
    "error": "ERROR",
    "exception": "ERROR",
    "critical": "CRITICAL",
    "fatal": "CRITICAL",
}
INFO_METHODS = {"info": "INFO"}
LOGGER_NAMES = ("log", "logger", "_log", "_logger", "LOG", "logging", "LOGGER")


@dataclass(frozen=True)
class PyMessage:
    """One message found in a Python file (the caller wraps it in the core Message)."""

    text: str
    style: str  # literal | fstring | printf | brace
    file: str
    line: int
    level: str
    function: str


def _fstring_text(node: ast.JoinedStr) -> str:
    parts: list[str] = []
    for value in node.values:
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            parts.append(value.value)
        elif isinstance(value, ast.FormattedValue):
            parts.append("{" + ast.unparse(value.value) + "}")
    return "".join(parts)


def _text_of(node: ast.AST, names: dict[str, ast.AST], depth: int = 0) -> tuple[str, str] | None:
    """The (text, style) of a message expression, or None when it is not built from literals."""
    if depth > 4:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value, "literal"
    if isinstance(node, ast.JoinedStr):
        text = _fstring_text(node)
        has_expr = any(isinstance(v, ast.FormattedValue) for v in node.values)
        return text, "fstring" if has_expr else "literal"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        left = _text_of(node.left, names, depth + 1)
        if left and left[1] == "literal":
            return left[0], "printf"
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = _text_of(node.left, names, depth + 1)
        right = _text_of(node.right, names, depth + 1)
        if left is None and right is None:
            return None
        lt = left[0] if left else "{" + ast.unparse(node.left) + "}"
        rt = right[0] if right else "{" + ast.unparse(node.right) + "}"
        styles = {part[1] for part in (left, right) if part}
        if styles <= {"literal"} and left and right:
            return lt + rt, "literal"
        if "printf" in styles or "brace" in styles:
            return None  # mixed styles: too irregular to render faithfully
        return lt + rt, "fstring"
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
        and isinstance(node.func.value, ast.Constant)
        and isinstance(node.func.value.value, str)
    ):
        return node.func.value.value, "brace"
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "join"
    ):
        return None
    if isinstance(node, ast.Name) and node.id in names:
        return _text_of(names[node.id], names, depth + 1)
    return None


def _callee_name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _logger_call(call: ast.Call, methods: dict[str, str]) -> str | None:
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in methods:
        return None
    owner = func.value
    owner_name = ""
    if isinstance(owner, ast.Name):
        owner_name = owner.id
    elif isinstance(owner, ast.Attribute):
        owner_name = owner.attr
    if owner_name in LOGGER_NAMES or owner_name.endswith("logger") or owner_name.endswith("_log"):
        return methods[func.attr]
    return None


class _Finder(ast.NodeVisitor):
    def __init__(
        self, rel: str, methods: dict[str, str], throwers: dict[str, tuple[int, int]]
    ) -> None:
        self.rel = rel
        self.methods = methods
        self.throwers = throwers
        self.found: list[PyMessage] = []
        self.stack: list[str] = []
        self.names: list[dict[str, ast.AST]] = [{}]

    def _visit_scope(self, node: ast.AST, name: str) -> None:
        self.stack.append(name)
        self.names.append({})
        self.generic_visit(node)
        self.names.pop()
        self.stack.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._visit_scope(node, node.name)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._visit_scope(node, node.name)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._visit_scope(node, node.name)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            if isinstance(target, ast.Name):
                self.names[-1][target.id] = node.value
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.target, ast.Name) and isinstance(node.op, ast.Add):
            prev = self.names[-1].get(node.target.id)
            if prev is not None:
                self.names[-1][node.target.id] = ast.BinOp(
                    left=prev, op=ast.Add(), right=node.value
                )
        self.generic_visit(node)

    def _add(self, node: ast.AST, msg_node: ast.AST, level: str, lazy_args: bool = False) -> None:
        got = _text_of(msg_node, self.names[-1])
        if got is None:
            return
        text, style = got
        if lazy_args and style == "literal":
            style = "printf"
        if not text.strip():
            return
        self.found.append(
            PyMessage(text, style, self.rel, node.lineno, level, ".".join(self.stack) or "<module>")
        )

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc
        if isinstance(exc, ast.Call) and exc.args:
            self._add(node, exc.args[0], _callee_name(exc.func) or "Exception")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        level = _logger_call(node, self.methods)
        thrower = self.throwers.get(_callee_name(node.func))
        if thrower and len(node.args) > max(thrower):
            exc_type, message = (node.args[i] for i in thrower)
            self._add(node, message, _callee_name(exc_type) or "Exception")
        elif level and node.args:
            # logging formats lazily: `log.warning("... %s", value)` is a printf format
            self._add(node, node.args[0], level, lazy_args=len(node.args) > 1)
        elif _callee_name(node.func) == "warn" and isinstance(node.func, (ast.Attribute, ast.Name)):
            owner = node.func.value if isinstance(node.func, ast.Attribute) else None
            is_warnings = owner is None or (isinstance(owner, ast.Name) and owner.id == "warnings")
            if is_warnings and node.args:
                category = "UserWarning"
                if len(node.args) > 1:
                    category = _callee_name(node.args[1]) or category
                for kw in node.keywords:
                    if kw.arg == "category":
                        category = _callee_name(kw.value) or category
                self._add(node, node.args[0], category)
        self.generic_visit(node)


def messages_in_file(
    path: Path,
    rel: str,
    include_info: bool = False,
    throwers: dict[str, tuple[int, int]] | None = None,
) -> list[PyMessage]:
    """Every message in one Python file, in source order (INFO logs too when asked)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
    methods = {**LOG_METHODS, **INFO_METHODS} if include_info else LOG_METHODS
    finder = _Finder(rel, methods, throwers or {})
    finder.visit(tree)
    return sorted(finder.found, key=lambda m: (m.line, m.text))


def messages_under(
    root: Path,
    subdirs: list[str],
    skip: tuple[str, ...] = (),
    include_info: bool = False,
    throwers: dict[str, tuple[int, int]] | None = None,
) -> Iterator[PyMessage]:
    """Messages of every `.py` file under root/subdir (sorted paths; tests and skips left out)."""
    for sub in subdirs:
        base = root / sub
        files = [base] if base.is_file() else sorted(base.rglob("*.py"))
        for path in files:
            rel = path.relative_to(root).as_posix()
            if "/test" in rel or any(rel.startswith(s) for s in skip):
                continue
            yield from messages_in_file(path, rel, include_info, throwers)
