"""NIXL (github.com/ai-dynamo/nixl), NVIDIA's inference transfer library: its failure messages.

The C++ agent, its backend plugins (UCX, libfabric, GDS, POSIX, object store, ...) and its
utilities log through Abseil streams behind NIXL's own macros (src/utils/common/nixl_log.h):
`NIXL_ERROR << ...` is `LOG(ERROR)`, `NIXL_WARN` is `LOG(WARNING)`, `NIXL_FATAL` is
`LOG(FATAL)`, `NIXL_ERROR_FUNC` prefixes the function name, and the `P` variants append
strerror. They print `E1203 14:02:11.482913   12345 file.cpp:123] <text>` on the process's
stderr (vLLM's NixlConnector, Dynamo and SGLang workers). Older releases (before 0.4) used the
same macros. The Python bindings turn a failed status into an exception named after it
(`nixl._bindings.nixlBackendError: NIXL_ERR_BACKEND`), read from `throw_nixl_exception`; a
`throw std::runtime_error(...)` reaches Python as `RuntimeError`. The Python API (`nixl_agent`,
src/api/python and the nixl-meta package) is read with `ast`. Tests, benchmarks and examples
are left out; INFO, DEBUG and TRACE lines are progress.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from catalogs.core.message import Message
from catalogs.cppstreams import logged_and_thrown
from catalogs.python_messages import extract_python

EMITTER = "nixl"
CPP_SUFFIXES = {".cpp", ".cc", ".h", ".hpp", ".cu"}
SKIP_PARTS = {"test", "tests", "benchmark", "benchmarks", "examples", "example"}
STREAM_LEVELS = {"ERROR", "WARNING", "FATAL"}
ERROR_CALLS = ("std::runtime_error", "std::invalid_argument")
# NIXL's macros, rewritten to the Abseil call they stand for (line numbers kept).
_MACROS = [
    (re.compile(r"\bNIXL_P?ERROR_FUNC\b"), 'LOG(ERROR) << __FUNCTION__ << ": "'),
    (re.compile(r"\bNIXL_P?ERROR\b(?!_)"), "LOG(ERROR)"),
    (re.compile(r"\bNIXL_P?WARN\b(?!_)"), "LOG(WARNING)"),
    (re.compile(r"\bNIXL_P?FATAL\b(?!_)"), "LOG(FATAL)"),
    (re.compile(r"\.WithPerror\(\)"), ""),
]
_STATUS_THROW = re.compile(
    r"case\s+(NIXL_ERR_\w+)\s*:\s*throw\s+(nixl\w+Error)\s*\(\s*nixlEnumStrings::statusStr"
)
PY_INCLUDE = ("src/api/python/", "src/bindings/python/")
PY_LOG_LEVELS = {"ERROR", "WARNING", "CRITICAL"}


def _skipped(relative: str) -> bool:
    parts = relative.split("/")
    return any(p in SKIP_PARTS or p.endswith("_test.cpp") for p in parts)


def _cpp(checkout: Path, release: str) -> list[Message]:
    found: list[Message] = []
    for path in sorted((checkout / "src").rglob("*")):
        if path.suffix not in CPP_SUFFIXES or not path.is_file():
            continue
        relative = path.relative_to(checkout).as_posix()
        if _skipped(relative) or relative.endswith("nixl_log.h"):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for macro, call in _MACROS:
            text = macro.sub(call, text)
        found += logged_and_thrown(
            EMITTER, release, relative, text, ("LOG",), STREAM_LEVELS, ERROR_CALLS
        )
        for status in _STATUS_THROW.finditer(text):
            line = text.count("\n", 0, status.start()) + 1
            found.append(
                Message(
                    EMITTER,
                    release,
                    status.group(1),
                    "literal",
                    relative,
                    line,
                    f"nixl._bindings.{status.group(2)}",
                    "throw_nixl_exception",
                )
            )
    return found


def _python(checkout: Path, release: str) -> list[Message]:
    """The Python API's raises and logger lines; a logger level is recorded as `PY_<LEVEL>`
    (NIXL's Python logger prints its own prefix, not Abseil's)."""
    found = extract_python(checkout, release, EMITTER, PY_INCLUDE)
    return [replace(m, level=f"PY_{m.level}") if m.level in PY_LOG_LEVELS else m for m in found]


def extract(checkout: Path, release: str) -> list[Message]:
    return _cpp(checkout, release) + _python(checkout, release)
