"""Failure messages of a Python code base, found with the `ast` module.

Shared by the catalogs of Python emitters (DeepSpeed, Megatron-LM, Transformers, Accelerate, vLLM,
TGI's server, SGLang, Ray, JAX). It finds what a failed run prints:

- `raise SomeError("...")` / `raise SomeError(f"...")` (level: the exception's name),
- `logger.error/warning/exception/critical/fatal(...)`, `logger.log(level, ...)`, Megatron's
  `log_single_rank`, DeepSpeed's `log_dist(level=...)` and `warnings.warn(...)` (level: ERROR,
  WARNING, CRITICAL),
- `assert cond, "..."` (level: AssertionError),
- calls of an emitter's own helpers whose first argument is the message, when its extract.py
  names them as they are called (`named={"rank_zero_warn": "WARNING"}`: Lightning's warnings;
  `{"click.echo": "ECHO"}`: a CLI's reports).

The text is the format exactly as written: a plain string is `literal`, `"..." % args` or a logger
call with arguments is `printf`, `"...".format(...)` is `brace`, an f-string (or a concatenation
with non-string parts) is `fstring` with each expression kept as `{expr}` and literal braces
doubled. A message held in a local variable (`msg = f"..."; raise ValueError(msg)`) is resolved to
the assignment before it in the same function. Nothing here decides a class: mapping.yaml does.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

LOG_LEVELS = {
    "error": "ERROR",
    "exception": "ERROR",
    "critical": "CRITICAL",
    "fatal": "CRITICAL",
    "warning": "WARNING",
    "warn": "WARNING",
    "warning_once": "WARNING",
    "warning_rank0": "WARNING",
    "warning_advice": "WARNING",
    "error_once": "ERROR",
}
_PRINTF = re.compile(
    r"%(?:\([^)]*\))?[-+ #0]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlLqjzt]*[diouxXeEfFgGcrsa]"
)
_STYLE_RANK = {"literal": 0, "printf": 1, "brace": 2, "fstring": 3}


@dataclass(frozen=True)
class Found:
    """One message as the source writes it (plain data; extract.py turns it into a Message)."""

    text: str
    style: str  # literal | printf | brace | fstring
    file: str  # relative to the checkout, '/'-separated
    line: int
    level: str  # exception name, or ERROR / WARNING / CRITICAL / AssertionError
    function: str


def _escape_braces(s: str) -> str:
    return s.replace("{", "{{").replace("}", "}}")


class _Text:
    """A message being assembled: parts that are literal text or `{expr}` placeholders."""

    def __init__(self) -> None:
        self.parts: list[tuple[bool, str]] = []  # (is_placeholder, text)
        self.style = "literal"

    def lit(self, s: str) -> None:
        self.parts.append((False, s))

    def expr(self, s: str) -> None:
        self.parts.append((True, s))
        self.style = "fstring"

    def has_literal(self) -> bool:
        return any(not ph and s.strip() for ph, s in self.parts)

    def render(self) -> str:
        if self.style == "fstring":
            return "".join(s if ph else _escape_braces(s) for ph, s in self.parts)
        return "".join(s for _, s in self.parts)


def _expr_text(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except Exception:
        return "expr"


def _joined(node: ast.JoinedStr, out: _Text) -> None:
    for v in node.values:
        if isinstance(v, ast.Constant) and isinstance(v.value, str):
            out.lit(v.value)
        elif isinstance(v, ast.FormattedValue):
            inner = _expr_text(v.value)
            conv = {115: "!s", 114: "!r", 97: "!a"}.get(v.conversion, "")
            spec = ""
            if v.format_spec is not None and isinstance(v.format_spec, ast.JoinedStr):
                spec = ":" + "".join(
                    p.value if isinstance(p, ast.Constant) else "{" + _expr_text(p.value) + "}"
                    for p in v.format_spec.values
                    if isinstance(p, ast.Constant | ast.FormattedValue)
                )
            out.expr("{" + inner + conv + spec + "}")


def _assemble(node: ast.AST, env: dict[str, ast.AST], out: _Text, depth: int = 0) -> bool:
    """Append the message expression `node` to `out`; False when it is not a message at all."""
    if depth > 8:
        return False
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        out.lit(node.value)
        return True
    if isinstance(node, ast.JoinedStr):
        _joined(node, out)
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = _Text()
        ok_l = _assemble(node.left, env, left, depth + 1)
        right = _Text()
        ok_r = _assemble(node.right, env, right, depth + 1)
        if not ok_l and not ok_r:
            return False
        for ok, part, src in ((ok_l, left, node.left), (ok_r, right, node.right)):
            if ok:
                out.parts.extend(part.parts)
                out.style = _max_style(out.style, part.style)
            else:
                out.expr("{" + _expr_text(src) + "}")
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        inner = _Text()
        if _assemble(node.left, env, inner, depth + 1) and inner.style == "literal":
            out.parts.extend(inner.parts)
            out.style = _max_style(out.style, "printf")
            return True
        return False
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
    ):
        inner = _Text()
        if _assemble(node.func.value, env, inner, depth + 1) and inner.style == "literal":
            out.parts.extend(inner.parts)
            out.style = _max_style(out.style, "brace")
            return True
        return False
    if isinstance(node, ast.Name) and node.id in env:
        return _assemble(
            env[node.id], {k: v for k, v in env.items() if k != node.id}, out, depth + 1
        )
    return False


def _max_style(a: str, b: str) -> str:
    # mixing an f-string with a %-format or .format is rare; the richer style wins
    return a if _STYLE_RANK[a] >= _STYLE_RANK[b] else b


def _is_logger(func: ast.Attribute) -> bool:
    recv = _expr_text(func.value).lower()
    return "log" in recv or recv in {"warnings", "self._warn", "_warn"}


def _exc_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


class ScopedVisitor(ast.NodeVisitor):
    """Walks one file knowing the function it is in and the names that function assigned, so a
    message built in a variable (`msg = "..."; msg += f"..."; raise X(msg)`) is read where it is
    raised. Catalogs subclass it for the shapes their emitter reports in."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.found: list[Found] = []
        self.func_stack: list[str] = ["<module>"]
        self.env_stack: list[dict[str, ast.AST]] = [{}]

    # --- scopes: a message variable is resolved within its function -------------------------
    def _scope(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.func_stack.append(node.name)
        self.env_stack.append({})
        self.generic_visit(node)
        self.func_stack.pop()
        self.env_stack.pop()

    visit_FunctionDef = _scope
    visit_AsyncFunctionDef = _scope

    # --- messages: what a node prints, kept with where it is printed -----------------------
    def text_of(self, node: ast.AST, env: dict[str, ast.AST] | None = None) -> _Text | None:
        """The text `node` prints (a literal, an f-string, a variable this function built), read
        with this function's names (or `env`); None when no part of it is literal."""
        out = _Text()
        scope = self.env_stack[-1] if env is None else env
        return out if _assemble(node, scope, out) and out.has_literal() else None

    def record(self, text: str, style: str, line: int, level: str) -> None:
        """Keep a message printed at `line` of this file, in the function being walked."""
        self.found.append(Found(text, style, self.file, line, level, self.func_stack[-1]))

    def visit_Assign(self, node: ast.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self.env_stack[-1][node.targets[0].id] = node.value
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        # `message += "..."` after `message = "..."`: the text printed when both ran
        if isinstance(node.target, ast.Name) and isinstance(node.op, ast.Add):
            prev = self.env_stack[-1].get(node.target.id)
            if prev is not None:
                self.env_stack[-1][node.target.id] = ast.BinOp(
                    left=prev, op=ast.Add(), right=node.value
                )
        self.generic_visit(node)


class FileVisitor(Protocol):
    """What `visit_package` needs of a visitor: it walks a tree and keeps what it found."""

    found: list[Found]

    def visit(self, node: ast.AST) -> Any: ...


def visit_package(
    root: Path, package: str, exclude: tuple[str, ...], visitor: Callable[[str], FileVisitor]
) -> list[Found]:
    """What `visitor(rel)` finds in each .py file of `root/package` (sorted, paths relative to
    `root`), leaving out paths that start with an `exclude` prefix and files that do not parse."""
    found: list[Found] = []
    for path in sorted((root / package).rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(exclude):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"), filename=rel)
        except (SyntaxError, ValueError):
            continue
        walker = visitor(rel)
        walker.visit(tree)
        found += walker.found
    return found


class _Visitor(ScopedVisitor):
    def __init__(self, file: str, named: dict[str, str] | None = None) -> None:
        super().__init__(file)
        self.named = named or {}

    # --- emitters ---------------------------------------------------------------------------
    def _add(self, msg: ast.AST, level: str, line: int, extra_args: bool) -> None:
        out = self.text_of(msg)
        if out is None:
            return
        text = out.render()
        style = out.style
        if style == "literal" and extra_args and _PRINTF.search(text):
            style = "printf"  # logger.error("... %s", value)
        self.record(text, style, line, level)

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc
        if isinstance(exc, ast.Call) and exc.args:
            name = _exc_name(exc)
            if name:
                self._add(exc.args[0], name, node.lineno, len(exc.args) > 1)
        self.generic_visit(node)

    def visit_Assert(self, node: ast.Assert) -> None:
        if node.msg is not None:
            self._add(node.msg, "AssertionError", node.lineno, False)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        f = node.func
        name = _exc_name(f) or ""
        if isinstance(f, ast.Attribute) and f.attr in LOG_LEVELS and node.args and _is_logger(f):
            recv = _expr_text(f.value)
            level = "WARNING" if recv == "warnings" else LOG_LEVELS[f.attr]
            self._add(node.args[0], level, node.lineno, len(node.args) > 1)
        elif name in _LEVEL_ARG and len(node.args) > _LEVEL_ARG[name] + 1:
            # logger.log(logging.ERROR, msg), log_single_rank(logger, logging.WARNING, msg)
            at = _LEVEL_ARG[name]
            level = _level_name(node.args[at])
            if level:
                self._add(node.args[at + 1], level, node.lineno, len(node.args) > at + 2)
        elif self.named and node.args and _expr_text(f) in self.named:
            # an emitter's own helper, named by its extract.py as it is called:
            # rank_zero_warn("...", category=...), click.echo(f"Error: ...")
            self._add(node.args[0], self.named[_expr_text(f)], node.lineno, len(node.args) > 1)
        elif name == "log_dist" and node.args:
            # DeepSpeed: log_dist(message, ranks=[0], level=logging.WARNING)
            level = next((_level_name(k.value) for k in node.keywords if k.arg == "level"), None)
            if level:
                self._add(node.args[0], level, node.lineno, False)
        self.generic_visit(node)


_LEVEL_ARG = {"log": 0, "log_single_rank": 1, "log_on_each_pipeline_stage": 1}


def _level_name(node: ast.AST) -> str | None:
    """WARNING / ERROR / CRITICAL for `logging.WARNING` and the like; None below warning."""
    attr = _exc_name(node) or ""
    return {
        "WARNING": "WARNING",
        "WARN": "WARNING",
        "ERROR": "ERROR",
        "CRITICAL": "CRITICAL",
        "FATAL": "CRITICAL",
    }.get(attr)


def scan_file(path: Path, rel: str, named: dict[str, str] | None = None) -> list[Found]:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"), filename=rel)
    except (SyntaxError, ValueError):
        return []
    v = _Visitor(rel, named)
    v.visit(tree)
    return v.found


def scan(
    root: Path,
    include: Iterable[str],
    exclude: Iterable[str] = (),
    named: dict[str, str] | None = None,
) -> Iterator[Found]:
    """Every message in the .py files under `root` whose relative path starts with an `include`
    prefix and with no `exclude` prefix or path component (tests, examples, benchmarks)."""
    inc = tuple(include)
    exc = tuple(exclude)
    files: list[tuple[str, Path]] = []
    for p in root.rglob("*.py"):
        rel = p.relative_to(root).as_posix()
        if not rel.startswith(inc) or rel.startswith(exc):
            continue
        parts = rel.split("/")
        if any(
            part in {"tests", "test", "testing", "benchmarks", "examples"} for part in parts[:-1]
        ):
            continue
        if parts[-1].startswith("test_"):
            continue
        files.append((rel, p))
    for rel, p in sorted(files):
        yield from scan_file(p, rel, named)


def release_root(checkout: Path, release: str) -> Path:
    """The tree of `release`: `checkout/<release>` when the checkout holds one folder per release
    (unpacked wheels, `git archive` of each tag), else the checkout itself."""
    sub = checkout / release
    return sub if sub.is_dir() else checkout


_STATES_A_REQUIREMENT = re.compile(
    r"(?i)\b(?:must|should|needs? to|has to|have to) (?:not )?(?:be|have|match|equal|divide)\b"
    r"|\bat (?:least|most)\b|divisib|\bnot (?:yet )?supported|\bonly supports?\b|unsupported"
    r"|\bexpected\b.{0,80}\b(?:got|but|found|instead)\b|\brequires?\b|\bcan(?:not|'t) be\b"
    r"|\bplease\b|\bincompatible\b|\bmismatch"
)
"""An assert message that states what the program needs of its input or settings."""


def in_scope(found: Found, assert_paths: tuple[str, ...]) -> bool:
    """`assert cond, "..."` counts in the files where asserts are user-facing config checks, and
    elsewhere when its message states a requirement the run did not meet ("micro-batches must
    be at least PP_SIZE-1"): that reaches a training log as advice. Other asserts are internal
    invariants ("bucket is not ready")."""
    if found.level != "AssertionError" or found.file.startswith(assert_paths):
        return True
    return _STATES_A_REQUIREMENT.search(found.text) is not None


def to_messages(found: Iterable[Found], emitter: str, release: str) -> list:
    from catalogs.core import Message  # the shared record (catalogs/core)

    return [
        Message(
            emitter=emitter,
            release=release,
            text=f.text,
            style=f.style,
            file=f.file,
            line=f.line,
            level=f.level,
            function=f.function,
        )
        for f in found
    ]


def extract_python(
    checkout: Path,
    release: str,
    emitter: str,
    include: tuple[str, ...],
    exclude: tuple[str, ...] = (),
    assert_paths: tuple[str, ...] = (),
    named: dict[str, str] | None = None,
) -> list:
    root = release_root(checkout, release)
    found = [f for f in scan(root, include, exclude, named) if in_scope(f, assert_paths)]
    return to_messages(found, emitter, release)
