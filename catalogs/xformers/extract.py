"""xFormers' failure messages (github.com/facebookresearch/xformers), from the source of a pinned
release (see source.yaml).

Scope: what a run that calls `xformers.ops.memory_efficient_attention` (directly, or through
diffusers, vLLM's older back ends, Stable Diffusion front ends, fairseq2) prints when it fails:

- The operator dispatch (`xformers/ops/fmha/`, read with `ast` by `catalogs/python_messages.py`):
  raises, warnings, logger calls and the asserts of the public interface. When no back end takes
  the inputs, `_run_priority_list` raises one `NotImplementedError` that lists every back end it
  tried, each as "`cutlassF` is not supported because:" (a helper's returned text, level
  `DISPATCH` here) followed by one indented line per reason. Those reasons are not raised: each
  back end's `not_supported_reasons` appends them to a list (`reasons.append(f"dtype={dtype}
  (supported: ...)")`), read here as messages of level `REASON`, since each of them is a line of
  the error a user posts ("requires device with capability > (8, 0) but your GPU has capability
  (7, 5) (too old)").
- The extension loader (`xformers/_cpp_lib.py`): when the compiled extension does not fit the
  installed PyTorch or Python, the import logs `WARNING[XFORMERS]: ` followed by the text the
  loader's exception classes build in `__str__` ("xFormers can't load C++/CUDA extensions.
  xFormers was built for: ..."), read here at level `XFORMERS`, one message per wording the
  branches of `__str__` assemble.
- The CUDA and ROCm attention kernels' argument checks (`TORCH_CHECK(cond, ...)` and
  `XFORMERS_CHECK(cond, ...)`, read with `catalogs/cppsource.py`): the CUTLASS kernels xFormers
  built itself until 0.0.24 (`xformers/csrc/attention/cuda/fmha`; later releases call PyTorch's
  copy, whose texts the pytorch catalogs hold) and the Composable Kernel build for AMD GPUs
  (`hip_fmha`, `hip_decoder`). A Python caller sees them as `RuntimeError: <text>`. Checks
  without a text (`TORCH_CHECK(query.dim() == 4)`) print only the condition and are not read.

Left out: the block-sparse and 2:4-sparsity kernels (`csrc/sparse24`, `csrc/attention/*spmm*`)
and the research components (`xformers/components`, `benchmarks`), which training runs rarely
reach. Nothing here decides a class: mapping.yaml does.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from catalogs.core.message import Message
from catalogs.cppsource import macro_messages, source_files
from catalogs.python_messages import (
    Found,
    _assemble,
    _expr_text,
    _Text,
    extract_python,
    release_root,
    to_messages,
)

EMITTER = "xformers"
PY_INCLUDE = (
    "xformers/ops/fmha/",
    "xformers/ops/common.py",
    "xformers/_cpp_lib.py",
    "xformers/__init__.py",
)
# the asserts of memory_efficient_attention's own entry points check what the caller passed
ASSERT_PATHS = ("xformers/ops/fmha/__init__.py", "xformers/ops/fmha/dispatch.py")
REASON = "REASON"
DISPATCH = "DISPATCH"
LOADER = "XFORMERS"
# the helper that writes each back end's heading of the dispatch error
_HEADING_HELPERS = {"_format_not_supported_reasons"}
# exception classes whose `__str__` is the text the import warning prints
_LOADER_FILE = "xformers/_cpp_lib.py"

CPP_ROOTS = ("xformers/csrc/attention",)
CPP_INCLUDE = (
    "xformers/csrc/attention/cuda/fmha/",
    "xformers/csrc/attention/hip_fmha/",
    "xformers/csrc/attention/hip_decoder/",
)
CPP_SUFFIXES = {".cu", ".cpp", ".h", ".cuh", ".hpp"}
# each macro -> how many leading arguments (the condition) are not part of the text
CPP_MACROS = {"TORCH_CHECK": 1, "XFORMERS_CHECK": 1}
# generated instantiation files hold no checks; the kernels' own headers do
CPP_SKIP = ("xformers/csrc/attention/cuda/fmha/kernels/",)


class _Reasons(ast.NodeVisitor):
    """What the shared reader does not see: the not-supported reasons appended to a list, the
    heading each back end gets in the dispatch error, and the loader exceptions' `__str__`."""

    def __init__(self, rel: str) -> None:
        self.rel = rel
        self.found: list[Found] = []
        self.functions: list[str] = ["<module>"]
        self.classes: list[str] = []
        self.assigned: list[dict[str, list[ast.AST]]] = [{}]

    def _add(self, node: ast.AST, level: str, line: int, env: dict[str, ast.AST]) -> None:
        out = _Text()
        if _assemble(node, env, out) and out.has_literal():
            self.found.append(
                Found(out.render(), out.style, self.rel, line, level, self.functions[-1])
            )

    def _scope(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.functions.append(node.name)
        self.assigned.append({})
        self.generic_visit(node)
        self.assigned.pop()
        self.functions.pop()

    visit_FunctionDef = _scope
    visit_AsyncFunctionDef = _scope

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.classes.append(node.name)
        self.generic_visit(node)
        self.classes.pop()

    def visit_Assign(self, node: ast.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self.assigned[-1].setdefault(node.targets[0].id, []).append(node.value)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        f = node.func
        if (
            isinstance(f, ast.Attribute)
            and f.attr == "append"
            and _expr_text(f.value).endswith("reasons")
            and len(node.args) == 1
        ):
            self._add(node.args[0], REASON, node.lineno, {})
        self.generic_visit(node)

    def visit_Return(self, node: ast.Return) -> None:
        if node.value is not None:
            if self.functions[-1] in _HEADING_HELPERS:
                self._add(node.value, DISPATCH, node.lineno, {})
            elif (
                self.rel == _LOADER_FILE
                and self.functions[-1] == "__str__"
                and self.classes
                and self.classes[-1].endswith("Exception")
            ):
                # `msg` is assigned in each branch before the return: one text per wording
                names = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
                variants: list[dict[str, ast.AST]] = [{}]
                for name in sorted(names & self.assigned[-1].keys()):
                    variants = [
                        {**env, name: value}
                        for env in variants
                        for value in self.assigned[-1][name]
                    ]
                for env in variants:
                    self._add(node.value, LOADER, node.lineno, env)
        self.generic_visit(node)


def _python_extras(checkout: Path, release: str) -> list[Message]:
    root = release_root(checkout, release)
    found: list[Found] = []
    for rel in sorted(p.relative_to(root).as_posix() for p in (root / "xformers").rglob("*.py")):
        if not rel.startswith(PY_INCLUDE):
            continue
        try:
            tree = ast.parse((root / rel).read_text(encoding="utf-8", errors="replace"), rel)
        except (SyntaxError, ValueError):
            continue
        visitor = _Reasons(rel)
        visitor.visit(tree)
        found += visitor.found
    return to_messages(found, EMITTER, release)


def _cpp_checks(checkout: Path, release: str) -> list[Message]:
    root = release_root(checkout, release)
    found: list[Message] = []
    for path, rel in source_files(root, CPP_SUFFIXES, CPP_SKIP, CPP_ROOTS, CPP_INCLUDE):
        src = path.read_text(encoding="utf-8", errors="replace")
        for m in macro_messages(src, CPP_MACROS):
            # both macros raise c10::Error, which Python prints as RuntimeError
            found.append(
                Message(EMITTER, release, m.text, m.style, rel, m.line, "RuntimeError", m.function)  # type: ignore[arg-type]
            )
    return found


def _raised_as(message: Message) -> Message:
    # `_ensure_op_supports_or_raise(exc_type, ...)` raises the class its callers pass, and every
    # caller passes ValueError (a back end forced with op=... that refuses the inputs)
    if message.level == "exc_type":
        return dataclasses.replace(message, level="ValueError")
    return message


def extract(checkout: Path, release: str) -> list[Message]:
    python = extract_python(checkout, release, EMITTER, PY_INCLUDE, (), ASSERT_PATHS)
    return (
        [_raised_as(m) for m in python]
        + _python_extras(checkout, release)
        + _cpp_checks(checkout, release)
    )
