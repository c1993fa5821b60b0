"""LightGBM's failure messages, from the source of a pinned release (see source.yaml).

Two halves print them:

- the C++ library (lib_lightgbm): `Log::Fatal(fmt, ...)` (include/LightGBM/utils/log.h prints
  "[LightGBM] [Fatal] <text>" to stderr, then throws std::runtime_error, which the C API
  returns and the Python package raises as lightgbm.basic.LightGBMError), `Log::Warning(fmt,
  ...)` ("[LightGBM] [Warning] <text>"), and the CHECK macros of log.h, which are a Log::Fatal
  of "Check failed: " #condition " at %s, line %d .\n" (CHECK_GT(a, b) is CHECK((a) > (b)),
  so its condition prints as "(a) > (b)"; CHECK_NOTNULL(p) prints "p Can't be NULL at %s, line
  %d ."). Read: every C++ source under src/ (the network layer's sockets and machine list, the
  data loading, the boosting, the tree learners, the CPU, OpenCL and CUDA GPU learners) and
  include/LightGBM/. `CheckElementsIntervalClosed` (utils/common.h) builds its format in a
  stream: its literal pieces with each streamed value as `%s`. Info and Debug lines are
  progress, not failures.
- the Python package (python-package/lightgbm/: basic, engine, sklearn, dask, callback,
  compat, plotting): raises (level: the exception's name), `_log_warning(...)` and
  `warnings.warn(...)` (both printed by Python's warnings module: level UserWarning).
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core import Message
from catalogs.core.csource import find_calls
from catalogs.cppsource import _args, _blank_comments, _enclosing_function, source_files
from catalogs.cppstreams import _piece, _split_top
from catalogs.python_messages import extract_python

EMITTER = "lightgbm"
CPP_SUFFIXES = {".cpp", ".h", ".hpp", ".cu", ".cuh", ".hu", ".tpp"}
CPP_INCLUDE = ("src/", "include/LightGBM/")
# log.h holds the CHECK macros' own definitions (read at each use); yamc's lock helpers throw
# std::system_error of their own; json11 reports parse errors in a string the callers print
# through Log::Fatal (read there)
CPP_SKIP = (
    "include/LightGBM/utils/log.h",
    "include/LightGBM/utils/yamc/",
    "src/io/json11.cpp",
    "include/LightGBM/utils/json11.h",
)
LOG_LEVELS = {"Fatal": "FATAL", "Warning": "WARNING"}
# log.h: CHECK_xx(a, b) is CHECK((a) <op> (b)); the condition is stringized into the format
CHECK_OPS = {
    "CHECK_EQ": "==",
    "CHECK_NE": "!=",
    "CHECK_GE": ">=",
    "CHECK_LE": "<=",
    "CHECK_GT": ">",
    "CHECK_LT": "<",
}
_CHECK = re.compile(r"(?<![\w.:])(CHECK(?:_EQ|_NE|_GE|_LE|_GT|_LT|_NOTNULL)?)\s*\(")
_CHECK_TAIL = " at %s, line %d .\n"
# utils/common.h: `std::ostringstream os; os << "[%s]: ..." << y[i] << ...;` then
# `Log::Fatal(os.str().c_str(), ...)`
_STREAMED_FATAL = re.compile(
    r"std::ostringstream\s+(\w+)\s*;\s*\1\s*<<(?P<expr>[^;]*);"
    r"\s*(?:LightGBM::)?Log::Fatal\(\s*\1\.str\(\)\.c_str\(\)"
)
PY_INCLUDE = ("python-package/lightgbm/",)


def _stringized(expr: str) -> str:
    """An argument as the preprocessor's # spells it: whitespace runs as one space."""
    return re.sub(r"\s+", " ", expr).strip()


def _checks(clean: str) -> list[tuple[str, int, str]]:
    """(format text, line, enclosing function) of each CHECK macro call."""
    found = []
    for call in _CHECK.finditer(clean):
        line_start = clean.rfind("\n", 0, call.start()) + 1
        if clean[line_start : call.start()].lstrip().startswith("#"):
            continue  # a #define or #ifndef of the macro itself
        parsed = _args(clean, call.end() - 1)
        if parsed is None:
            continue
        args = [_stringized(arg) for arg in parsed[0]]
        name = call.group(1)
        if name == "CHECK_NOTNULL":
            if len(args) != 1:
                continue
            text = f"{args[0]} Can't be NULL{_CHECK_TAIL}"
        elif name == "CHECK":
            if len(args) != 1:
                continue
            text = f"Check failed: {args[0]}{_CHECK_TAIL}"
        else:
            if len(args) != 2:
                continue
            text = f"Check failed: ({args[0]}) {CHECK_OPS[name]} ({args[1]}){_CHECK_TAIL}"
        if "%" in text[: -len(_CHECK_TAIL)] or '"' in text:
            continue  # a condition that is not plain code text (vsnprintf would read a % in it)
        line = clean.count("\n", 0, call.start()) + 1
        found.append((text, line, _enclosing_function(clean, call.start())))
    return found


def _streamed(clean: str) -> list[tuple[str, int, str]]:
    found = []
    for stream in _STREAMED_FATAL.finditer(clean):
        pieces = [_piece(p) for p in _split_top(stream.group("expr"), "<<")]
        text = "".join(piece if literal else "%s" for piece, literal in pieces)
        line = clean.count("\n", 0, stream.start("expr")) + 1
        found.append((text, line, _enclosing_function(clean, stream.start())))
    return found


def _cpp_file(rel: str, text: str, release: str) -> list[Message]:
    found: list[Message] = []
    clean = _blank_comments(text)  # the same length as text, line for line
    starts = [0] + [m.end() for m in re.finditer("\n", clean)]
    lines = text.splitlines()
    for call in find_calls(text, tuple(LOG_LEVELS)):
        column = lines[call.line - 1].find(f"Log::{call.name}")
        if column < 0:
            continue  # another class's Fatal/Warning
        if not call.args or not call.args[0]:
            continue  # a format held in a variable (ex.what(), a CUDA error name)
        function = _enclosing_function(clean, starts[call.line - 1] + column)
        level = LOG_LEVELS[call.name]
        found.append(
            Message(EMITTER, release, call.args[0], "printf", rel, call.line, level, function)
        )
    for body, line, function in _checks(clean):
        found.append(Message(EMITTER, release, body, "printf", rel, line, "CHECK", function))
    for body, line, function in _streamed(clean):
        found.append(Message(EMITTER, release, body, "printf", rel, line, "FATAL", function))
    return found


def _cpp(checkout: Path, release: str) -> list[Message]:
    found: list[Message] = []
    for path, rel in source_files(checkout, CPP_SUFFIXES, CPP_SKIP, ("",), CPP_INCLUDE):
        found += _cpp_file(rel, path.read_text(encoding="utf-8", errors="replace"), release)
    return found


def _python(checkout: Path, release: str) -> list[Message]:
    messages = extract_python(
        checkout, release, EMITTER, PY_INCLUDE, named={"_log_warning": "UserWarning"}
    )
    # basic.py's default logger is warnings.warn: both print "<file>:<line>: UserWarning: <text>"
    return [
        Message(m.emitter, m.release, m.text, m.style, m.file, m.line, "UserWarning", m.function)
        if m.level == "WARNING"
        else m
        for m in messages
    ]


def extract(checkout: Path, release: str) -> list[Message]:
    return _cpp(checkout, release) + _python(checkout, release)
