"""NVIDIA TensorRT-LLM's failure messages, from the C++ and Python source of a pinned release (see
source.yaml): the C++ runtime, batch manager, executor and common utilities (`cpp/tensorrt_llm`,
`cpp/include/tensorrt_llm`) and the Python package (`tensorrt_llm`).

The C++ side prints through a few macros, all printf formats (`tensorrt_llm::common::fmtstr`):

- `TLLM_CHECK_WITH_INFO(cond, fmt, ...)` throws a TllmException whose text is "[TensorRT-LLM][ERROR]
  Assertion failed: <fmt>" and `TLLM_CHECK(cond)` one whose text is the condition as written (level
  CHECK: both are printed after "Assertion failed: ");
- `TLLM_THROW(fmt, ...)` throws the text alone, as do the CUDA check (`check()` in cudaUtils.h:
  "[TensorRT-LLM][ERROR] CUDA runtime error in <call>: <error>") and other
  `TllmException(file, line, fmtstr(...))` (level THROW); the exception adds " (<file>:<line>)";
- `TLLM_LOG_ERROR(fmt, ...)` / `TLLM_LOG_WARNING(fmt, ...)` log a line (ERROR / WARNING), and the
  MPI/NCCL check macros log `fmtstr(...)` through the TensorRT logger at kERROR;
- `printf(fmt, ...)` prints to stdout (the plugins' NCCLCHECK, level PRINT).

A format argument built from a concatenation (`std::string("File does not exist: ") + path`) is
the literal pieces with `{}` for each expression (style `brace`). The Python package is read with
`ast`: raises and its logger's calls (`logger.error`, `logger.warning`; the logger's own
`self.warning`), its logger's levels named PY_ERROR / PY_WARNING apart from the C++ logger's.

Tests, examples, benchmarks and the per-model code are left out. Nothing here decides a class:
mapping.yaml does.
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core.message import Message
from catalogs.cppsource import _args, _blank_comments, _enclosing_function, source_files
from catalogs.cppstreams import _message, _piece, _split_top
from catalogs.python_messages import extract_python

EMITTER = "tensorrt_llm"
CPP_ROOTS = ("cpp/tensorrt_llm", "cpp/include/tensorrt_llm")
CPP_SUFFIXES = {".cpp", ".cc", ".cu", ".h", ".cuh"}
CPP_SKIP = ("cpp/tests/", "cpp/tensorrt_llm/deep_ep/", "cpp/tensorrt_llm/deep_gemm/")
# macro -> (level, index of the format argument; None: the condition itself is the text)
MACROS: dict[str, tuple[str, int | None]] = {
    "TLLM_CHECK_WITH_INFO": ("CHECK", 1),
    "TLLM_CHECK": ("CHECK", None),
    "TLLM_THROW": ("THROW", 0),
    "TLLM_LOG_ERROR": ("ERROR", 0),
    "TLLM_LOG_WARNING": ("WARNING", 0),
    "printf": ("PRINT", 0),
    "fmtstr": ("", 0),
}
# what a `fmtstr(...)` is handed to, looked for just before it: a thrown exception, a logged error
FMTSTR_SINKS = (("TllmException", "THROW"), ("kERROR", "ERROR"), ("kWARNING", "WARNING"))
_WRAPPED = re.compile(r"^(?:std::)?string\s*[({]\s*(.*?)\s*[)}]$", re.S)
_CONVERSION = re.compile(r"%[-+ #0-9.*]*(?:hh|h|ll|l|z|j|t|L)?[diouxXeEfgGcspn]")

PY_INCLUDE = ("tensorrt_llm/",)
PY_EXCLUDE = (
    "tensorrt_llm/models/",
    "tensorrt_llm/_torch/models/",
    "tensorrt_llm/serve/",
    "tensorrt_llm/bench/",
    "tensorrt_llm/tools/",
    "tensorrt_llm/scaffolding/",
    "tensorrt_llm/quantization/",
)
# the Logger class calls its own methods on itself
PY_NAMED = {"self.warning": "WARNING", "self.error": "ERROR", "self.critical": "CRITICAL"}
PY_LEVELS = {"ERROR": "PY_ERROR", "WARNING": "PY_WARNING", "CRITICAL": "PY_CRITICAL"}


def _pieces(expr: str) -> list[tuple[str, bool]]:
    """(text, is_literal) pieces of a format argument: `std::string(...)` unwrapped, a
    concatenation split on its top-level `+`."""
    expr = expr.strip()
    wrapped = _WRAPPED.match(expr)
    if wrapped:
        return _pieces(wrapped.group(1))
    parts = _split_top(expr, "+")
    if len(parts) > 1:
        return [piece for part in parts for piece in _pieces(part)]
    return [_piece(expr)]


def _format(arg: str) -> tuple[str, str] | None:
    """(text, style) of one format argument, or None when it holds no literal text."""
    found = _message(_pieces(arg))
    if found is None:
        return None
    text, style = found
    if style == "literal" and _CONVERSION.search(text):
        style = "printf"
    return text, style


def _fmtstr_level(clean: str, at: int) -> str:
    before = clean[max(0, at - 160) : at]
    for sink, level in FMTSTR_SINKS:
        if sink in before:
            return level
    return ""


def cpp_messages(src: str) -> list[tuple[str, str, int, str, str]]:
    """(text, style, line, level, function) of every failure macro call with a literal text."""
    clean = _blank_comments(re.sub(r"\\\n", " \n", src))
    names = "|".join(sorted(MACROS, key=len, reverse=True))
    found = []
    for call in re.finditer(rf"(?<![\w#])({names})\s*\(", clean):
        if clean[max(0, call.start() - 8) : call.start()].rstrip().endswith("define"):
            continue
        parsed = _args(clean, call.end() - 1)
        if parsed is None:
            continue
        args = parsed[0]
        level, index = MACROS[call.group(1)]
        if call.group(1) == "fmtstr":
            level = _fmtstr_level(clean, call.start())
            if not level:
                continue
        if index is None:
            # TLLM_CHECK(cond): the condition, stringized, is the text
            if not args or not args[0]:
                continue
            text, style = " ".join(args[0].split()), "literal"
        else:
            if len(args) <= index:
                continue
            formatted = _format(args[index])
            if formatted is None:
                continue
            text, style = formatted
        line = clean.count("\n", 0, call.start()) + 1
        found.append((text, style, line, level, _enclosing_function(clean, call.start())))
    return found


def extract(checkout: Path, release: str) -> list[Message]:
    found: list[Message] = []
    for path, rel in source_files(checkout, CPP_SUFFIXES, CPP_SKIP, roots=CPP_ROOTS):
        if "/tests/" in rel:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for body, style, line, level, function in cpp_messages(text):
            found.append(Message(EMITTER, release, body, style, rel, line, level, function))
    for m in extract_python(checkout, release, EMITTER, PY_INCLUDE, PY_EXCLUDE, named=PY_NAMED):
        level = PY_LEVELS.get(m.level, m.level)
        found.append(Message(EMITTER, release, m.text, m.style, m.file, m.line, level, m.function))
    return found
