"""PyTorch's compiler stack's messages (torch.compile): TorchDynamo (`torch/_dynamo`), Inductor
(`torch/_inductor`: lowering, scheduling, Triton and C++ code generation, autotuning, the compile
workers and caches), functorch and AOTAutograd (`torch/_functorch`) and torch.export
(`torch/export`), from the torch wheel's Python source.

The checkout is an unpacked torch wheel (the directory that holds `torch/`). The shared reader
(`catalogs/pysource.py`) gives what these modules raise, log at WARNING or above and warn. Five
shapes it does not see are read here, with its text reader:

- A graph break. Dynamo reports code it cannot trace through its own helper rather than a
  `raise`: `unimplemented("...")` in 2.4 (and most of 2.7), printed as `torch._dynamo.exc.
  Unsupported: <text>`; `unimplemented_v2(gb_type=..., context=..., explanation=..., hints=[...])`
  in 2.7 and `unimplemented(gb_type=..., ...)` in 2.13, printed as the graph-break type on the
  `Unsupported: ` line and the explanation on the next (`  Explanation: ...`). The positional text
  and the `gb_type` are read at the level `Unsupported`, the `explanation` at `Explanation`; the
  context (values of the traced program) and the hints (advice several breaks share) are not.
- `UserError(UserErrorType.X, "...")`, the error export and Dynamo raise for code that runs in
  eager but not under them: the text is its second argument (level `UserError`).
- An exception class that writes its own text (`super().__init__("Cannot find a working triton
  installation. ...")`, `InvalidCxxCompiler`, `CppCompileError`'s dedented template), read at the
  class's name.
- The error a CUDA graph tree sets on an output's storage, raised as a RuntimeError when the
  program touches the tensor after a later replay overwrote it ("Error: accessing tensor output of
  CUDAGraphs that has been overwritten by a subsequent run. ..."): the text handed to
  `_set_storage_access_error_msg` (2.4) or returned by its builder `format_dealloc_msg`.
- A raise whose text a local helper returns, or that re-raises with `.with_traceback(...)`
  (`raise RuntimeError(make_error_message(e)).with_traceback(...)`: "Failed running call_function
  ..." / "Dynamo failed to run FX node with fake tensors: ...").

Left out: Dynamo's polyfills (Python re-implementations of builtins that raise CPython's own texts
for the traced program, which are not the compiler's), and the debugging tools a run calls only on
request (the minifier under `torch/_dynamo/repro`, the bytecode debugger, Inductor's config fuzzer,
compiler bisector, mock cache, wrapper benchmark and profile analysis), and the CuTe DSL example
kernels 2.13 vendors from NVIDIA (`kernel/vendored_templates`, with their own command lines).
Nothing here decides a class: mapping.yaml does.
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

from catalogs.core import Message
from catalogs.pysource import PyMessage, _text_of, messages_under

EMITTER = "pytorch_compile"
PATHS = ["torch/_dynamo", "torch/_inductor", "torch/_functorch", "torch/export"]
SKIP = (
    "torch/_dynamo/polyfills/",
    "torch/_dynamo/repro/",
    "torch/_dynamo/bytecode_debugger.py",
    "torch/_inductor/fuzzer.py",
    "torch/_inductor/compiler_bisector.py",
    "torch/_inductor/mock_cache.py",
    "torch/_inductor/wrapper_benchmark.py",
    "torch/_inductor/analysis/",
    "torch/_inductor/kernel/vendored_templates/",
)
GRAPH_BREAK_CALLS = ("unimplemented", "unimplemented_v2", "unimplemented_with_warning")
# the keyword of a graph-break call -> the level its text is printed at
GRAPH_BREAK_KEYWORDS = {"gb_type": "Unsupported", "explanation": "Explanation"}
USER_ERROR = "UserError"
# functions that build an error's text for a raise elsewhere -> the level it is raised at: the
# CUDA graph trees' message for a tensor read after a later replay overwrote it (set as the
# storage's access error, raised as a RuntimeError when the tensor is touched)
MESSAGE_BUILDERS = {"format_dealloc_msg": "RuntimeError"}
# before the builder (2.4) the text was handed to the storage directly
STORAGE_ERROR = "_set_storage_access_error_msg"
# a base class whose name says it is an exception (Dynamo's own bases among them)
_EXCEPTION_BASE = re.compile(r"(?:Error|Exception|Issue|Traceback|Unsupported|Failed|Warning)$")


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _unwrap(node: ast.AST) -> ast.AST:
    """The text inside `textwrap.dedent(...)`, `.strip()` (a text dedented and stripped as
    written reads the same once the pattern collapses its white space)."""
    while isinstance(node, ast.Call):
        func = node.func
        if _name(func) == "dedent" and node.args:
            node = node.args[0]
        elif isinstance(func, ast.Attribute) and func.attr in ("strip", "lstrip", "rstrip"):
            node = func.value
        else:
            break
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return ast.Constant(textwrap.dedent(node.value).strip())
    return node


def _text(node: ast.AST, names: dict[str, ast.AST]) -> tuple[str, str] | None:
    node = _unwrap(node)
    # "...".format(...) whose receiver is a dedented template: the template's text, brace style
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
    ):
        inner = _unwrap(node.func.value)
        if isinstance(inner, ast.Constant) and isinstance(inner.value, str):
            return inner.value, "brace"
    # a local helper that returns the text (`make_error_message(e)`)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        helper = names.get("def " + node.func.id)
        if helper is not None:
            return _text_of(helper, names)
    return _text_of(node, names)


class _Shapes(ast.NodeVisitor):
    """Graph breaks, UserErrors, exception classes' own texts and raises through a helper."""

    def __init__(self, rel: str) -> None:
        self.rel = rel
        self.found: list[PyMessage] = []
        self.stack: list[str] = []
        self.names: list[dict[str, ast.AST]] = [{}]
        self.exceptions: set[str] = set()

    def _add(self, node: ast.AST, text_node: ast.AST, level: str) -> None:
        got = _text(text_node, self.names[-1])
        if got is None or not got[0].strip():
            return
        function = ".".join(self.stack) or "<module>"
        line = getattr(node, "lineno", 0)
        self.found.append(PyMessage(got[0], got[1], self.rel, line, level, function))

    def _scope(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self.stack.append(node.name)
        # a nested scope sees the enclosing one's names (a helper defined beside the raise)
        self.names.append(dict(self.names[-1]))
        self.generic_visit(node)
        self.names.pop()
        self.stack.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._note_helper(node)
        level = MESSAGE_BUILDERS.get(node.name)
        if level:
            for ret in ast.walk(node):
                if isinstance(ret, ast.Return) and ret.value is not None:
                    self._add(ret, ret.value, level)
        self._scope(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._scope(node)

    def _note_helper(self, node: ast.FunctionDef) -> None:
        """A function whose body is one `return <text>` stands for that text where it is called."""
        body = [s for s in node.body if not isinstance(s, ast.Expr)]  # docstrings
        if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
            self.names[-1]["def " + node.name] = body[0].value

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        is_exception = any(
            _EXCEPTION_BASE.search(_name(b)) or _name(b) in self.exceptions for b in node.bases
        )
        if is_exception:
            self.exceptions.add(node.name)
            for fn in node.body:
                if isinstance(fn, ast.FunctionDef) and fn.name == "__init__":
                    self._class_text(node.name, fn)
        self._scope(node)

    def _class_text(self, cls: str, init: ast.FunctionDef) -> None:
        # every text a name is given (`if compiler is None: msg = ... else: msg = ...`)
        assigned: dict[str, list[ast.AST]] = {}
        for stmt in ast.walk(init):
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target = stmt.targets[0]
                if isinstance(target, ast.Name):
                    assigned.setdefault(target.id, []).append(stmt.value)
        for call in ast.walk(init):
            if not isinstance(call, ast.Call) or _name(call.func) != "__init__":
                continue
            args = list(call.args)
            # Base.__init__(self, text) names the instance first; super().__init__(text) does not
            if isinstance(call.func, ast.Attribute) and not isinstance(call.func.value, ast.Call):
                args = args[1:]
            if not args:
                continue
            texts = [args[0]]
            if isinstance(args[0], ast.Name):
                texts = assigned.get(args[0].id, [])
            for node in texts:
                got = _text(node, {})
                if got and got[0].strip():
                    self.found.append(PyMessage(*got, self.rel, call.lineno, cls, cls))

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            if isinstance(target, ast.Name):
                self.names[-1][target.id] = node.value
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.target, ast.Name) and isinstance(node.op, ast.Add):
            prev = self.names[-1].get(node.target.id)
            if prev is not None:
                joined = ast.BinOp(left=prev, op=ast.Add(), right=node.value)
                self.names[-1][node.target.id] = joined
        self.generic_visit(node)

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc
        # raise X(text).with_traceback(tb): the shared reader sees the traceback, not the text
        if (
            isinstance(exc, ast.Call)
            and isinstance(exc.func, ast.Attribute)
            and exc.func.attr == "with_traceback"
            and isinstance(exc.func.value, ast.Call)
        ):
            exc = exc.func.value
            if exc.args:
                self._add(node, exc.args[0], _name(exc.func) or "Exception")
        # raise X(helper(...)): the helper's text (a plain raise the shared reader has read)
        elif (
            isinstance(exc, ast.Call)
            and exc.args
            and isinstance(exc.args[0], ast.Call)
            and isinstance(exc.args[0].func, ast.Name)
            and "def " + exc.args[0].func.id in self.names[-1]
        ):
            self._add(node, exc.args[0], _name(exc.func) or "Exception")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        callee = _name(node.func)
        if callee in GRAPH_BREAK_CALLS:
            # unimplemented_with_warning(e, code, msg) puts its text third (2.4)
            at = 2 if callee == "unimplemented_with_warning" else 0
            if len(node.args) > at:
                self._add(node, node.args[at], "Unsupported")
            for kw in node.keywords:
                if kw.arg in GRAPH_BREAK_KEYWORDS:
                    self._add(node, kw.value, GRAPH_BREAK_KEYWORDS[kw.arg])
        elif callee == USER_ERROR and len(node.args) > 1:
            self._add(node, node.args[1], USER_ERROR)
        elif callee == STORAGE_ERROR and len(node.args) > 1:
            self._add(node, node.args[1], "RuntimeError")
        self.generic_visit(node)


def _files(checkout: Path) -> list[tuple[str, Path]]:
    """The .py files the shared reader reads, in its order."""
    files = []
    for sub in PATHS:
        base = checkout / sub
        for path in sorted(base.rglob("*.py")) if base.is_dir() else []:
            rel = path.relative_to(checkout).as_posix()
            if "/test" not in rel and not rel.startswith(SKIP):
                files.append((rel, path))
    return files


def other_shapes(path: Path, rel: str) -> list[PyMessage]:
    """The messages of one file in the shapes the shared reader does not read."""
    visitor = _Shapes(rel)
    visitor.visit(ast.parse(path.read_text(encoding="utf-8"), filename=rel))
    return visitor.found


def extract(checkout: Path, release: str) -> list[Message]:
    found = list(messages_under(checkout, [p for p in PATHS if (checkout / p).exists()], SKIP))
    for rel, path in _files(checkout):
        found += other_shapes(path, rel)
    seen: set[PyMessage] = set()
    messages = []
    for m in found:
        if m in seen:  # a raise both readers see (the helper's text is read once)
            continue
        seen.add(m)
        messages.append(
            Message(EMITTER, release, m.text, m.style, m.file, m.line, m.level, m.function)
        )
    return messages
