"""OneFlow's launcher and distributed set-up failure messages, from the source of a pinned
release (see source.yaml).

Two halves print them:

- Python: the launcher (`python -m oneflow.distributed.launch`), the environment set-up
  (`oneflow/framework/env_util.py`, `oneflow/env.py`) and the torch-like `oneflow.distributed` /
  `oneflow.comm` wrappers: raises, warnings and the asserts of the wrappers' argument checks.
- C++: the control plane every process starts (`oneflow/core/control`: the bootstrap servers,
  the gRPC client and server; `oneflow/core/rpc`; `oneflow/core/job/env_global_objects_scope.cpp`):
  glog's `LOG(WARNING|ERROR|FATAL) << ...` streams and `CHECK*(...) << ...` texts (with
  `GRPC_CHECK(status)`, a CHECK_EQ on a gRPC call's status code).

Out of scope: the operators, the graph compiler, and the Maybe/JUST error chains of the rest of
the runtime; INFO and VLOG lines are progress.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.core import Message
from catalogs.cppstreams import stream_messages
from catalogs.python_messages import extract_python, release_root

EMITTER = "oneflow"
PY_INCLUDE = (
    "python/oneflow/distributed/",
    "python/oneflow/comm/",
    "python/oneflow/env.py",
    "python/oneflow/framework/env_util.py",
)
ASSERT_PATHS = ("python/oneflow/distributed/", "python/oneflow/comm/")
CPP_INCLUDE = (
    "oneflow/core/control/",
    "oneflow/core/rpc/",
    "oneflow/core/job/env_global_objects_scope.cpp",
)
CPP_SUFFIXES = {".cpp", ".h"}
LOG_LEVELS = {"FATAL": "FATAL", "ERROR": "LOG_ERROR", "WARNING": "LOG_WARNING"}
CHECKS = (
    "GRPC_CHECK",
    "CHECK",
    "CHECK_EQ",
    "CHECK_NE",
    "CHECK_LT",
    "CHECK_LE",
    "CHECK_GT",
    "CHECK_GE",
)


def _cpp(root: Path, release: str) -> list[Message]:
    out: list[Message] = []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.suffix not in CPP_SUFFIXES or not rel.startswith(CPP_INCLUDE) or "_test" in p.name:
            continue
        src = p.read_text(encoding="utf-8", errors="replace")
        found = [(m, LOG_LEVELS.get(m.level)) for m in stream_messages(src, ("LOG",))]
        found += [(m, "CHECK") for m in stream_messages(src, CHECKS)]
        for m, level in found:
            if level is None:
                continue
            out.append(
                Message(
                    emitter=EMITTER,
                    release=release,
                    text=m.text,
                    style=m.style,
                    file=rel,
                    line=m.line,
                    level=level,
                    function=m.function,
                )
            )
    return out


def extract(checkout: Path, release: str) -> list:
    root = release_root(checkout, release)
    py = extract_python(checkout, release, EMITTER, PY_INCLUDE, (), ASSERT_PATHS)
    return py + _cpp(root, release)
