"""torch.utils.cpp_extension's messages: what users see when a C++/CUDA extension (flash-attn,
mamba-ssm, causal-conv1d, apex, DeepSpeed's ops, a custom op) fails to build or JIT-load.

The checkout is an unpacked torch wheel (the directory that holds `torch/`). The modules read are
the builder itself (`torch/utils/cpp_extension.py`: `BuildExtension`, `CUDAExtension`, `load` /
`load_inline`, the CUDA / ROCm / SYCL toolkit look-ups, the compiler checks), the versioner it
keys JIT builds with (`_cpp_extension_versioner.py`), the lock file JIT builds wait on
(`file_baton.py`) and hipify, which it runs on ROCm builds. All are read with `ast`
(`catalogs/pysource.py`: raises, warnings, logger calls at INFO and above); three forms that
module needs read beside it:

- `print(..., file=sys.stderr)`: up to 2.4 the builder prints its status and its "No CUDA
  runtime is found" note instead of logging them (`catalogs/python_messages.py` reads the
  calls, level PRINT);
- its long texts are module constants used far from where they are defined
  (`raise RuntimeError(CUDA_MISMATCH_MESSAGE.format(...))`,
  `logger.warning(ABI_INCOMPATIBILITY_WARNING, compiler)`), which a function-scoped reader
  cannot resolve: each use of a module-level string constant as a raise's, a warning's or a log
  call's message is a message at the use's line;
- a failed ninja run raises `RuntimeError(error_prefix + ": " + output)`, the prefix being an
  argument its callers pass (`error_prefix=f"Error building extension '{name}'"`): each such
  argument is a RuntimeError message at the caller's line.

The compiler warnings' texts are framed by a banner (`!! WARNING !!` and rows of `!`), which
up to 2.4 sits on lines of its own and from 2.8 or so is glued to the text (the constants became
adjacent literals without line breaks); the banner is decoration several texts share, so it is
left out of the message, which then starts at "Your compiler (...)" in every release.

From 2.8 or so the builder raises `RuntimeError(CUDA_MISMATCH_MESSAGE, found, built)`: the
exception prints the tuple, the `%s` unfilled; the message is still read as a printf format,
whose `%s` match the literal `%s` as well as a version.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from catalogs.core import Message
from catalogs.core.message import Style
from catalogs.pysource import messages_under
from catalogs.python_messages import scan_file

EMITTER = "pytorch_cpp_extension"
PATHS = [
    "torch/utils/cpp_extension.py",
    "torch/utils/_cpp_extension_versioner.py",
    "torch/utils/file_baton.py",
    "torch/utils/hipify",
]
PRINTING = "torch/utils/cpp_extension.py"  # the one module whose prints are reports
LOG_LEVELS = {"warning": "WARNING", "warn": "WARNING", "error": "ERROR", "info": "INFO"}
NINJA_RUNNER = "_run_ninja_build"  # raises RuntimeError(f"{error_prefix}: {ninja's output}")
BANNER = re.compile(r"[ \t]*!! WARNING !!|!{20,}")  # the compiler warnings' frame, not their text


def _constants(tree: ast.Module) -> dict[str, str]:
    """Module-level `NAME = "..."` (adjacent literals already joined by the parser)."""
    out: dict[str, str] = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            out[node.targets[0].id] = BANNER.sub("", node.value.value)
    return out


def _constant_use(node: ast.AST, constants: dict[str, str]) -> tuple[str, Style] | None:
    """`NAME` or `NAME.format(...)` for a module constant: its text and style."""
    if isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id], "literal"
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in constants
    ):
        return constants[node.func.value.id], "brace"
    return None


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


class _ConstantUses(ast.NodeVisitor):
    """The uses of module constants as messages, and the ninja runner's error prefixes."""

    def __init__(self, rel: str, constants: dict[str, str]) -> None:
        self.rel = rel
        self.constants = constants
        self.stack: list[str] = []
        self.found: list[tuple[str, Style, int, str, str]] = []

    def _scope(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self.stack.append(node.name)
        self.generic_visit(node)
        self.stack.pop()

    visit_FunctionDef = _scope
    visit_AsyncFunctionDef = _scope
    visit_ClassDef = _scope

    def _add(self, msg: ast.AST, level: str, line: int, extra_args: bool) -> None:
        got = _constant_use(msg, self.constants)
        if got is None:
            return
        text, style = got
        if style == "literal" and extra_args and "%" in text:
            style = "printf"  # logger.warning(NAME, value): formatted lazily
        self.found.append((text, style, line, level, ".".join(self.stack) or "<module>"))

    def visit_Raise(self, node: ast.Raise) -> None:
        if isinstance(node.exc, ast.Call) and node.exc.args:
            self._add(node.exc.args[0], _name(node.exc), node.lineno, len(node.exc.args) > 1)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and node.args:
            owner = _name(func.value)
            if owner == "warnings" and func.attr == "warn":
                category = _name(node.args[1]) if len(node.args) > 1 else "UserWarning"
                self._add(node.args[0], category, node.lineno, False)
            elif owner.endswith("logger") and func.attr in LOG_LEVELS:
                self._add(node.args[0], LOG_LEVELS[func.attr], node.lineno, len(node.args) > 1)
        if _name(func) == NINJA_RUNNER:
            for kw in node.keywords:
                if kw.arg != "error_prefix":
                    continue
                style: Style
                if isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                    text, style = kw.value.value, "literal"
                elif isinstance(kw.value, ast.JoinedStr):
                    text = "".join(
                        v.value if isinstance(v, ast.Constant) else "{" + ast.unparse(v.value) + "}"
                        for v in kw.value.values
                        if isinstance(v, (ast.Constant, ast.FormattedValue))
                    )
                    style = "fstring"
                else:
                    continue
                stack = ".".join(self.stack) or "<module>"
                self.found.append((text, style, node.lineno, "RuntimeError", stack))
        self.generic_visit(node)


def _module_constant_messages(checkout: Path, rel: str, release: str) -> list[Message]:
    tree = ast.parse((checkout / rel).read_text(encoding="utf-8"), filename=rel)
    uses = _ConstantUses(rel, _constants(tree))
    uses.visit(tree)
    return [
        Message(EMITTER, release, text, style, rel, line, level, function)
        for text, style, line, level, function in uses.found
    ]


def extract(checkout: Path, release: str) -> list[Message]:
    paths = [p for p in PATHS if (checkout / p).exists()]
    found = [
        Message(EMITTER, release, m.text, m.style, m.file, m.line, m.level, m.function)
        for m in messages_under(checkout, paths, include_info=True)
    ]
    found += [
        Message(EMITTER, release, f.text, f.style, f.file, f.line, f.level, f.function)  # type: ignore[arg-type]
        for f in scan_file(checkout / PRINTING, PRINTING, named={"print": "PRINT"})
        if f.level == "PRINT"
    ]
    found += _module_constant_messages(checkout, PRINTING, release)
    return sorted(set(found))
