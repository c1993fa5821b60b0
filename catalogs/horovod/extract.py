"""Horovod's failure messages, from the source of a pinned release (see source.yaml).

Two halves print them:

- the C++ core (`horovod/common/`: the background thread, the stall inspector, the MPI, Gloo,
  NCCL, CCL and DDL operations): `LOG(ERROR|WARNING|FATAL) << ...` streams, and the error
  `Status`es (`Status::UnknownError(...)`, `Status::Aborted(...)`, ...) and `std::` exceptions
  the frontends re-raise as `HorovodInternalError` / `RuntimeError` (e.g. "Horovod has been shut
  down. ..."). Test files are left out; INFO/DEBUG/TRACE streams are progress, not failures.
- the Python frontends (`horovod/torch`, `horovod/tensorflow`, `horovod/keras`, the runner and
  elastic driver, Ray and Spark integrations): raises, logger errors/warnings, `warnings.warn`.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.core.message import Message
from catalogs.cppstreams import concat_messages, sink_messages, stream_messages
from catalogs.python_messages import extract_python

EMITTER = "horovod"
CPP_SUFFIXES = {".cc", ".h", ".cu"}
STREAM_LEVELS = {"ERROR", "WARNING", "FATAL"}
ERROR_CALLS = (
    "Status::UnknownError",
    "Status::Aborted",
    "Status::InvalidArgument",
    "Status::PreconditionError",
    "Status::InProgress",
    "std::runtime_error",
    "std::logic_error",
    "std::invalid_argument",
)
SINKS = {
    "stall_inspector.cc": (("message", "WARNING"),),
    "controller.cc": (("error_message_stream", "PreconditionError"),),
    "operations.cc": (("error_message_stream", "PreconditionError"),),
}
PY_INCLUDE = ("horovod/",)
EXCLUDE = ("horovod/mxnet/",)  # MXNet is retired upstream (Apache attic, 2023)


def _cpp(checkout: Path, release: str) -> list[Message]:
    found: list[Message] = []
    for path in sorted((checkout / "horovod").rglob("*")):
        if path.suffix not in CPP_SUFFIXES or not path.is_file():
            continue
        relative = path.relative_to(checkout).as_posix()
        if relative.startswith(EXCLUDE):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in stream_messages(text, ("LOG",)):
            if m.level in STREAM_LEVELS:
                found.append(
                    Message(
                        EMITTER, release, m.text, m.style, relative, m.line, m.level, m.function
                    )
                )
        # Reports built in a stream and emitted whole: the stall inspector's (logged at
        # WARNING, or ERROR once a rank passes HOROVOD_STALL_SHUTDOWN_TIME_SECONDS; each piece
        # that starts a new line is one printed line) and the coordinator's mismatch errors,
        # returned to every rank as a PreconditionError the frontend raises.
        for sink, level in SINKS.get(path.name, ()):
            for m in sink_messages(text, (sink,), level):
                found.append(
                    Message(
                        EMITTER, release, m.text, m.style, relative, m.line, m.level, m.function
                    )
                )
        for m in concat_messages(text, ERROR_CALLS):
            found.append(
                Message(EMITTER, release, m.text, m.style, relative, m.line, m.level, m.function)
            )
    return found


def extract(checkout: Path, release: str) -> list[Message]:
    return _cpp(checkout, release) + extract_python(checkout, release, EMITTER, PY_INCLUDE, EXCLUDE)
