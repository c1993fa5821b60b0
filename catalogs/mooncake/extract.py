"""Mooncake (github.com/kvcache-ai/Mooncake): Transfer Engine and Store failure messages.

Both log through glog: `LOG(ERROR) << "RdmaTransport: No available RNIC";`, `LOG(WARNING) <<
...`, `LOG_FIRST_N(WARNING, n) << ...`, `LOG_IF(ERROR, cond) << ...`, printed on the process's
stderr as `E1203 14:02:11.482913  2143 engine.cpp:120] <text>` (vLLM, SGLang and Dynamo
workers that load the Mooncake connector print them among their own lines). Streamed pieces that
are expressions become `{}`. `throw std::runtime_error(...)` texts reach Python as the bound
call's `RuntimeError`. The Python package (mooncake-wheel/mooncake: the store/transfer-engine
wrappers and the vLLM/SGLang connectors' helpers) is read with `ast`. Tests, benchmarks, examples,
and vendored code (extern/) are left out; INFO and VLOG lines are progress.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from catalogs.core.message import Message
from catalogs.cppstreams import logged_and_thrown
from catalogs.python_messages import extract_python

EMITTER = "mooncake"
CPP_ROOTS = (
    "mooncake-transfer-engine",
    "mooncake-store",
    "mooncake-common",
    "mooncake-integration",
    "mooncake-pg",
    "mooncake-ep",
)
CPP_SUFFIXES = {".cpp", ".cc", ".h", ".hpp", ".cu"}
SKIP_PARTS = {"tests", "test", "benchmark", "benchmarks", "example", "examples", "extern"}
STREAM_HEADS = ("LOG", "LOG_IF", "LOG_FIRST_N", "LOG_EVERY_N")
STREAM_LEVELS = {"ERROR", "WARNING", "FATAL"}
ERROR_CALLS = ("std::runtime_error", "std::invalid_argument")
PY_INCLUDE = ("mooncake-wheel/mooncake/",)
PY_EXCLUDE = ("mooncake-wheel/mooncake/tests/",)
PY_LOG_LEVELS = {"ERROR", "WARNING", "CRITICAL"}


def _skipped(relative: str) -> bool:
    parts = relative.split("/")
    return any(p in SKIP_PARTS or p.endswith("_test.cpp") or p.startswith("test_") for p in parts)


def _cpp(checkout: Path, release: str) -> list[Message]:
    found: list[Message] = []
    for root in CPP_ROOTS:
        for path in sorted((checkout / root).rglob("*")):
            if path.suffix not in CPP_SUFFIXES or not path.is_file():
                continue
            relative = path.relative_to(checkout).as_posix()
            if _skipped(relative):
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            found += logged_and_thrown(
                EMITTER, release, relative, text, STREAM_HEADS, STREAM_LEVELS, ERROR_CALLS
            )
    return found


def _python(checkout: Path, release: str) -> list[Message]:
    """The Python package's raises and logger lines; a logger level is recorded as `PY_<LEVEL>`
    (Python's logging prints its own prefix, not glog's)."""
    found = extract_python(checkout, release, EMITTER, PY_INCLUDE, PY_EXCLUDE)
    return [replace(m, level=f"PY_{m.level}") if m.level in PY_LOG_LEVELS else m for m in found]


def extract(checkout: Path, release: str) -> list[Message]:
    return _cpp(checkout, release) + _python(checkout, release)
