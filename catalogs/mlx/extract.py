"""MLX's failure messages, from the source of a pinned release (see source.yaml).

Two halves print them:

- the C++ library (mlx/: the array ops and transforms, the Metal and CUDA backends, the
  distributed layer with its MPI, ring, NCCL and JACCL backends): exceptions thrown with their
  text, `throw std::runtime_error("..." + x)` (level: the exception's name), `fmt::format("...",
  ...)` texts of failure wording thrown or stored as a command buffer's error (level FORMAT),
  `std::ostringstream msg; msg << "[op] ..." << x;` reports thrown whole (level THROW), the
  ring backend's `log_info(true, "Sending to socket", fd, "failed with errno", errno)` (printed
  as "[ring] " and its arguments joined by spaces) and `std::cerr << ...` / `fprintf(stderr,
  ...)` lines (level STDERR). The JACCL library's examples and the tests are left out.
- the Python package (python/mlx/: mlx.launch's distributed_run and _distributed_utils, the
  nn layers, optimizers and utils): raises, logger calls and warnings.

Progress lines (`log_info(verbose_, "Rank", rank_, "accepting")`) are read too; the mapping
keeps them as context.
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core import Message
from catalogs.core.csource import find_calls
from catalogs.cppsource import _args, _blank_comments, _enclosing_function, source_files
from catalogs.cppstreams import (
    _message,
    _piece,
    _split_top,
    bare_stream_messages,
    concat_messages,
    sink_messages,
)
from catalogs.python_messages import extract_python

EMITTER = "mlx"
CPP_SUFFIXES = {".cpp", ".h", ".cu", ".cuh", ".mm"}
CPP_SKIP = ("mlx/distributed/jaccl/lib/examples/",)
EXCEPTIONS = (
    "std::runtime_error",
    "std::invalid_argument",
    "std::out_of_range",
    "std::logic_error",
)
# an fmt::format text that reports a failure (not a kernel name or a generated source line)
_FAILURE_WORDS = re.compile(
    r"(?i)fail|error|cannot|can't|couldn't|unable|invalid|not supported|unsupported|must|"
    r"out of memory|exceed|mismatch|expected"
)
_FMT = re.compile(r"(?<![\w:])fmt::format\s*\(")
_LOG_INFO = re.compile(r"(?<![\w:])log_info\s*\(")
PY_INCLUDE = ("python/mlx/",)
PY_EXCLUDE = ("python/mlx/_stub_patterns",)


def _fmt_messages(clean: str) -> list[tuple[str, int, str]]:
    found = []
    for call in _FMT.finditer(clean):
        parsed = _args(clean, call.end() - 1)
        if parsed is None or not parsed[0]:
            continue
        message = _message([_piece(p) for p in _split_top(parsed[0][0], "+")])
        if message is None or message[1] != "literal" or not _FAILURE_WORDS.search(message[0]):
            continue
        line = clean.count("\n", 0, call.start()) + 1
        found.append((message[0], line, _enclosing_function(clean, call.start())))
    return found


def _ring_logs(clean: str) -> list[tuple[str, str, int, str]]:
    """`log_info(verbose, a, b, ...)`: "[ring] a b ..." (each non-literal argument as {})."""
    found = []
    for call in _LOG_INFO.finditer(clean):
        parsed = _args(clean, call.end() - 1)
        if parsed is None or len(parsed[0]) < 2:
            continue
        pieces = [_piece(p) for p in parsed[0][1:]]
        if not any(literal for _, literal in pieces):
            continue
        words = [text if literal else "{}" for text, literal in pieces]
        text = "[ring] " + " ".join(words)
        style = "brace" if any(not literal for _, literal in pieces) else "literal"
        line = clean.count("\n", 0, call.start()) + 1
        found.append((text, style, line, _enclosing_function(clean, call.start())))
    return found


def _cpp_file(rel: str, text: str, release: str) -> list[Message]:
    found: list[Message] = []

    def add(text_: str, style: str, line: int, level: str, function: str) -> None:
        found.append(Message(EMITTER, release, text_, style, rel, line, level, function))  # type: ignore[arg-type]

    clean = _blank_comments(text)
    for m in concat_messages(text, EXCEPTIONS):
        add(m.text, m.style, m.line, m.level, m.function)
    for m in sink_messages(text, ("msg",), "THROW"):
        add(m.text, m.style, m.line, m.level, m.function)
    for m in bare_stream_messages(text, {"std::cerr": "STDERR"}):
        add(m.text, m.style, m.line, m.level, m.function)
    for body, line, function in _fmt_messages(clean):
        add(body, "brace", line, "FORMAT", function)
    if rel.startswith("mlx/distributed/ring/"):
        for body, style, line, function in _ring_logs(clean):
            add(body, style, line, "STDERR", function)
    for call in find_calls(text, ("fprintf",)):
        if len(call.args) >= 2 and call.args[1]:
            add(call.args[1], "printf", call.line, "STDERR", "")
    return found


def _cpp(checkout: Path, release: str) -> list[Message]:
    found: list[Message] = []
    for path, rel in source_files(checkout, CPP_SUFFIXES, CPP_SKIP, ("mlx",)):
        if "/tests/" in rel:
            continue
        found += _cpp_file(rel, path.read_text(encoding="utf-8", errors="replace"), release)
    return found


def extract(checkout: Path, release: str) -> list[Message]:
    return _cpp(checkout, release) + extract_python(
        checkout, release, EMITTER, PY_INCLUDE, PY_EXCLUDE
    )
