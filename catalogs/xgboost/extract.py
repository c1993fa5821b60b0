"""XGBoost's distributed, GPU and input failure messages, from the source of a pinned release
(see source.yaml).

Two halves print them:

- the C++ library (libxgboost): `LOG(FATAL|ERROR|WARNING) << ...` streams and the
  `CHECK(cond) << ...` / `CHECK_EQ(x, y) << ...` forms (dmlc-core's LogMessageFatal, thrown as
  `dmlc::Error` and re-raised in Python as `xgboost.core.XGBoostError`), the collective
  `Result`s (`Fail("...")`, `system::FailWithCode("...")`, 2.0 and later: each printed as one
  `- [file:line|time]: message` line of the report `SafeColl` logs), the 1.x rabit engine's
  printf-style `utils::Error/Check/Assert(...)` (logged through LOG(FATAL)) and the common
  error texts of `src/common/error_msg.h`. Read: the collective layer (`src/collective/`,
  `include/xgboost/collective/`, `rabit/`, `plugin/federated` is left out), the device helpers
  and other common code (`src/common/` device, CUDA, IO and error files), the context (device
  ordinals) and the data layer (`src/data/`, where input data is refused).
- the Python package's distributed parts (`python-package/xgboost/`: tracker.py,
  collective.py, rabit.py (1.x), federated.py, dask, spark): raises, logger calls and warnings.

INFO/DEBUG/CONSOLE/TRACKER streams are progress, not failures; tests are left out.
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core import Message
from catalogs.core.csource import find_calls
from catalogs.cppsource import _args, _blank_comments, _enclosing_function, source_files
from catalogs.cppstreams import _message, _piece, _split_top, sink_messages, stream_messages
from catalogs.python_messages import extract_python

EMITTER = "xgboost"
CPP_SUFFIXES = {".cc", ".h", ".cu", ".cuh"}
CPP_INCLUDE = (
    "src/collective/",
    "include/xgboost/collective/",
    "rabit/src/",
    "rabit/include/rabit/internal/",
    "src/common/device_helpers.",
    "src/common/device_vector.",
    "src/common/cuda_",
    "src/common/common.",
    "src/common/io.",
    "src/common/error_msg.",
    "src/common/host_device_vector.",
    "src/context.cc",
    "src/data/",
)
CPP_SKIP = ("rabit/src/engine_mock.cc", "rabit/src/allreduce_mock.h")
# C++ levels apart from the Python loggers' WARNING/ERROR (their lines differ)
LOG_LEVELS = {"FATAL": "FATAL", "ERROR": "LOG_ERROR", "WARNING": "LOG_WARNING"}
CHECKS = ("CHECK", "CHECK_EQ", "CHECK_NE", "CHECK_LT", "CHECK_LE", "CHECK_GT", "CHECK_GE")
FAILS = ("Fail", "FailWithCode")
# rabit/include/rabit/internal/utils.h: printf-style helpers that end in LOG(FATAL) << msg
RABIT_ERRORS = {"Error": 0, "Check": 1, "Assert": 1}
# src/common/error_msg.h: `constexpr StringView Name() { return "..."; }`, streamed into a
# CHECK or LOG(FATAL) by the callers
_RETURNED = re.compile(r'StringView\s+\w+\s*\(\s*\)\s*\{\s*return\s+((?:"(?:[^"\\\n]|\\.)*"\s*)+);')
# Reports built in a stringstream, then logged whole (LOG(FATAL) << ss.str()) or returned as a
# collective Result (Fail(ss.str())): each statement into the stream is one printed piece.
SINKS = {
    "src/common/device_helpers.cuh": (("ss", "FATAL"),),  # OOM on a worker, NCCL failure (1.x)
    "src/common/device_vector.cu": (("ss", "FATAL"),),  # OOM on a worker (3.x)
    "src/collective/nccl_stub.cc": (("ss", "Fail"), ("errs", "FATAL")),  # NCCL result, dlopen
}
# `std::string msg{"..." + path_ + "..."};` later logged (nccl_stub.cc: NCCL's dlopen failure)
_STRING_INIT = re.compile(r"std::string\s+\w+\s*\{([^;{}]*)\};")
PY_INCLUDE = (
    "python-package/xgboost/tracker.py",
    "python-package/xgboost/collective.py",
    "python-package/xgboost/rabit.py",
    "python-package/xgboost/federated.py",
    "python-package/xgboost/dask.py",
    "python-package/xgboost/dask/",
    "python-package/xgboost/spark/",
)


def _fails(text: str) -> list[tuple[str, str, int, str]]:
    """`Fail("..." + x, ...)` / `FailWithCode("...")`: the first argument's text."""
    clean = _blank_comments(text)
    names = "|".join(FAILS)
    found = []
    for call in re.finditer(
        rf"(?<![\w.])(?:(?:xgboost::)?(?:collective|system)::)?({names})\s*\(", clean
    ):
        parsed = _args(clean, call.end() - 1)
        if parsed is None or not parsed[0]:
            continue
        message = _message([_piece(p) for p in _split_top(parsed[0][0], "+")])
        if message is None:
            continue
        line = clean.count("\n", 0, call.start()) + 1
        found.append((message[0], message[1], line, _enclosing_function(clean, call.start())))
    return found


def _cpp_file(rel: str, text: str, release: str) -> list[Message]:
    found: list[Message] = []

    def add(text_: str, style: str, line: int, level: str, function: str) -> None:
        found.append(Message(EMITTER, release, text_, style, rel, line, level, function))  # type: ignore[arg-type]

    for m in stream_messages(text, ("LOG",)):
        if m.level in LOG_LEVELS:
            add(m.text, m.style, m.line, LOG_LEVELS[m.level], m.function)
    for m in stream_messages(text, CHECKS):
        add(m.text, m.style, m.line, "CHECK", m.function)
    if rel.startswith(("src/collective/", "include/xgboost/collective/", "rabit/")):
        for body, style, line, function in _fails(text):
            add(body, style, line, "Fail", function)
    for sink, level in SINKS.get(rel, ()):
        for m in sink_messages(text, (sink,), level):
            add(m.text, m.style, m.line, m.level, m.function)
    if rel in SINKS:
        clean = _blank_comments(text)
        for init in _STRING_INIT.finditer(clean):
            message = _message([_piece(p) for p in _split_top(init.group(1), "+")])
            if message is not None:
                line = clean.count("\n", 0, init.start()) + 1
                add(message[0], message[1], line, "FATAL", _enclosing_function(clean, init.start()))
    if rel.startswith("rabit/"):
        lines = text.splitlines()
        for call in find_calls(text, tuple(RABIT_ERRORS)):
            index = RABIT_ERRORS[call.name]
            if f"utils::{call.name}" not in lines[call.line - 1]:
                continue  # Socket::Error, a class's own Check: not the rabit helpers
            if len(call.args) <= index or not call.args[index]:
                continue
            add(call.args[index], "printf", call.line, "FATAL", "")
    if rel.endswith("error_msg.h"):
        clean = _blank_comments(text)
        for ret in _RETURNED.finditer(clean):
            pieces = re.findall(r'"((?:[^"\\\n]|\\.)*)"', ret.group(1))
            body = "".join(_piece(f'"{p}"')[0] for p in pieces)
            add(body, "literal", clean.count("\n", 0, ret.start()) + 1, "CHECK", "")
    return found


def _cpp(checkout: Path, release: str) -> list[Message]:
    found: list[Message] = []
    for path, rel in source_files(checkout, CPP_SUFFIXES, CPP_SKIP, ("",), CPP_INCLUDE):
        found += _cpp_file(rel, path.read_text(encoding="utf-8", errors="replace"), release)
    return found


def extract(checkout: Path, release: str) -> list[Message]:
    return _cpp(checkout, release) + extract_python(checkout, release, EMITTER, PY_INCLUDE)
