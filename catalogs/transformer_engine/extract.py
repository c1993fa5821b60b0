"""NVIDIA Transformer Engine's failure messages, from the source of a pinned release (see
source.yaml): the C++ core (`transformer_engine/common`), the PyTorch extension's C++
(`transformer_engine/pytorch/csrc`) and the Python of `transformer_engine/pytorch` and of
`transformer_engine/common` (the FP8 recipes, the loader of the shared libraries).

The C++ side reports through the macros of `common/util/logging.h`, whose pieces are streamed into
one text (`concat_strings(...)`) and thrown as a `std::runtime_error` that reaches Python as a
`RuntimeError`, prefixed by `__FILE__:__LINE__ in function <f>: `:

- `NVTE_CHECK(cond, ...)` prints "Assertion failed: <cond>. <pieces>" (level CHECK; the text is the
  condition as the preprocessor stringizes it, whitespace collapsed, a full stop, then the pieces);
  the comm+GEMM overlap's local `NVTE_DIM_CHECK(cond, message)` adds the shapes to it;
- `NVTE_ERROR(...)` the pieces alone (level ERROR); the check macros of logging.h and the driver
  and NVML wrappers are `NVTE_ERROR`s in macro bodies (`"CUDA Error: ", cudaGetErrorString(...)`,
  `"cuBLAS Error: "`, `"cuDNN Error: "` with cudnn-frontend's text), read there;
- `NVTE_WARN(...)` the pieces on stderr behind the same prefix (level WARN);
- the extension's `TORCH_CHECK(cond, ...)` a `RuntimeError` of the pieces (level RuntimeError).

A piece that is not a literal is `{}` (style `brace`, literal braces doubled). Userbuffers (the
tensor-parallel communication overlap) prints with printf formats: its kernels' `UB_PRINT(fmt,
...)` timeouts ("[file:function:line] <fmt>", level UB), the host code's `printf` (level PRINT)
and the IPC socket's `ipc_warn(fmt, ...)` (level IPC, followed by " : <strerror> (<errno>)").

The Python side is read with `ast` (raises, warnings, logger calls); `assert cond, "..."` counts
in the modules that validate what users configure (recipes, the FP8 state, modules' arguments,
userbuffers' set-up, attention back-ends, distributed checkpointing and CUDA graphs). Tests, JAX,
the examples and the device-side `NVTE_DEVICE_ERROR` guards are left out. Nothing here decides a
class: mapping.yaml does.
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core.csource import find_calls
from catalogs.core.message import Message
from catalogs.cppsource import _args, _blank_comments, _enclosing_function, source_files
from catalogs.cppstreams import _piece
from catalogs.python_messages import extract_python

EMITTER = "transformer_engine"
CPP_ROOTS = ("transformer_engine/common", "transformer_engine/pytorch/csrc")
CPP_SUFFIXES = {".cpp", ".cc", ".cu", ".h", ".cuh"}
CPP_SKIP = ("transformer_engine/common/include/",)
# macro -> (level, arguments before the text; None: the first is a condition printed before it)
MACROS: dict[str, tuple[str, int | None]] = {
    "NVTE_CHECK": ("CHECK", None),
    "NVTE_DIM_CHECK": ("CHECK", None),
    "NVTE_ERROR": ("ERROR", 0),
    "NVTE_WARN": ("WARN", 0),
    "TORCH_CHECK": ("RuntimeError", 1),
}
# what comm_gemm_overlap.cpp's NVTE_DIM_CHECK appends to its message
DIM_CHECK_TAIL = [(" (tensor shape=", True), ("{}", False), (", chunk shape=", True)]
DIM_CHECK_TAIL += [("{}", False), (", chunk offset=", True), ("{}", False), (")", True)]
PRINTF_CALLS = {"UB_PRINT": "UB", "printf": "PRINT", "ipc_warn": "IPC"}
PRINTF_UNDER = "transformer_engine/common/comm_gemm_overlap/"
_DEFINE = re.compile(r"#\s*define\s+$")

PY_INCLUDE = ("transformer_engine/pytorch/", "transformer_engine/common/")
# the build script, and the reference quantizers the tests compare against
PY_EXCLUDE = (
    "transformer_engine/pytorch/csrc/",
    "transformer_engine/common/include/",
    "transformer_engine/pytorch/setup.py",
    "transformer_engine/pytorch/experimental/",
    "transformer_engine/pytorch/custom_recipes/quantization_ref",
)
# `assert cond, "..."` is a user-facing check only in these files (configuration and argument
# validation); elsewhere an assert is an internal invariant and is not a message users act on.
ASSERT_PATHS = (
    "transformer_engine/common/recipe/",
    "transformer_engine/pytorch/fp8.py",
    "transformer_engine/pytorch/quantization.py",
    "transformer_engine/pytorch/distributed.py",
    "transformer_engine/pytorch/transformer.py",
    "transformer_engine/pytorch/graph.py",
    "transformer_engine/pytorch/cpu_offload",
    "transformer_engine/pytorch/module/",
    "transformer_engine/pytorch/attention/",
    "transformer_engine/pytorch/dot_product_attention/",
    "transformer_engine/pytorch/attention.py",
)


def _condition(arg: str) -> str:
    """The condition as `#expr` stringizes it: comments gone, whitespace runs one space."""
    return " ".join(re.sub(r"\\\n", " ", arg).split())


def _text(pieces: list[tuple[str, bool]]) -> tuple[str, str] | None:
    if not any(literal and text.strip() for text, literal in pieces):
        return None
    if all(literal for _, literal in pieces):
        return "".join(text for text, _ in pieces), "literal"
    doubled = (t.replace("{", "{{").replace("}", "}}") if lit else t for t, lit in pieces)
    return "".join(doubled), "brace"


def _macro_messages(src: str, rel: str, release: str) -> list[Message]:
    clean = _blank_comments(src)
    names = "|".join(sorted(MACROS, key=len, reverse=True))
    found: list[Message] = []
    for m in re.finditer(rf"\b({names})\s*\(", clean):
        if _DEFINE.search(clean[max(0, m.start() - 20) : m.start()]):
            continue  # the macro's own definition
        parsed = _args(clean, m.end() - 1)
        if parsed is None:
            continue
        args = [a for a in parsed[0] if a]
        level, skip = MACROS[m.group(1)]
        if skip is None:
            if not args:
                continue
            pieces = [(_condition(args[0]) + ". ", True)]
            pieces += [_piece(re.sub(r"\\\n", " ", a)) for a in args[1:]]
            if m.group(1) == "NVTE_DIM_CHECK":
                pieces += DIM_CHECK_TAIL
            if len(pieces) == 1:
                pieces = [(pieces[0][0].rstrip(), True)]
        else:
            pieces = [_piece(re.sub(r"\\\n", " ", a)) for a in args[skip:]]
        message = _text(pieces)
        if message is None:
            continue
        line = clean.count("\n", 0, m.start()) + 1
        function = _enclosing_function(clean, m.start())
        found.append(Message(EMITTER, release, *message, rel, line, level, function))  # type: ignore[arg-type]
    return found


def _printf_messages(src: str, rel: str, release: str) -> list[Message]:
    clean = _blank_comments(src)
    starts = [0] + [m.end() for m in re.finditer("\n", clean)]
    found: list[Message] = []
    for call in find_calls(src, PRINTF_CALLS):
        text = call.args[0] if call.args else ""
        if not text.strip():
            continue
        level = PRINTF_CALLS[call.name]
        function = _enclosing_function(clean, starts[call.line - 1])
        text = text.rstrip("\n")
        found.append(Message(EMITTER, release, text, "printf", rel, call.line, level, function))
    return found


def extract(checkout: Path, release: str) -> list[Message]:
    found: list[Message] = []
    for path, rel in source_files(checkout, CPP_SUFFIXES, CPP_SKIP, CPP_ROOTS):
        src = path.read_text(encoding="utf-8", errors="replace")
        found += _macro_messages(src, rel, release)
        if rel.startswith(PRINTF_UNDER):
            found += _printf_messages(src, rel, release)
    found += extract_python(checkout, release, EMITTER, PY_INCLUDE, PY_EXCLUDE, ASSERT_PATHS)
    return found
