"""Triton Inference Server's failure messages, from the C++ source of a pinned release (see
source.yaml): the server front end (`server/src`: main, the command line, the HTTP/gRPC/SageMaker
/Vertex AI endpoints, shared-memory registration, tracing) and the core library (`core/src`:
the model repository manager and model life cycle, backends and their shared libraries, model
configuration, schedulers, CUDA/pinned memory managers, caches, metrics, the server object).

Three shapes print them:

- the logging streams `LOG_ERROR << ...` and `LOG_WARNING << ...` (INFO lines report progress;
  the few that report a failure say so at WARNING or ERROR elsewhere), and
  `LOG_STATUS_ERROR(status, "what")` / `LOG_TRITONSERVER_ERROR(err, "what")`, which log
  "what: <Code>: <message>";
- the error texts of `Status(Status::Code::..., "...")` and
  `TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_..., "...")`: a model's load error reaches the log
  as "failed to load '<model>' version 1: <Code>: <message>" and in the final model table, and
  the server's start-up error as "error: creating server: <Code> - <message>"; the level is the
  code (INTERNAL, INVALID_ARG, ...);
- the front end's fatal start-up errors, `FAIL_IF_ERR(err, "what")` ("error: what: <Code> -
  <message>", then exit) and `FAIL("...")`, and its command-line errors
  (`throw ParseException("...")`, printed before the usage).

The logger JSON-escapes each message (quotes it, `"` -> `\\"`, a new line -> `\\n`) unless
TRITON_SERVER_ESCAPE_LOG_MESSAGES=0, and both pinned lines escape by default: the text of what
reaches the log (the logged lines and the errors' texts) is recorded as printed, escaped; the
front end's stderr lines (FAIL, ParseException) are printed as they are.

Unit tests, the example programs (simple.cc, multi_server.cc, memory_alloc.cc) and the Python
front-end package are left out. Nothing here decides a class: mapping.yaml does.
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core.message import Message
from catalogs.cppsource import _args, _blank_comments, _enclosing_function, _piece_text
from catalogs.cppstreams import bare_stream_messages, coded_messages, concat_messages

EMITTER = "triton_server"
ROOTS = ("server/src", "core/src")
SKIP = (
    "server/src/test/",
    "core/src/test/",
    "server/src/python/",
    "server/src/simple.cc",
    "server/src/multi_server.cc",
    "server/src/memory_alloc.cc",
)
STREAMS = {"LOG_ERROR": "ERROR", "LOG_WARNING": "WARNING"}
ERRORS = ("Status", "TRITONSERVER_ErrorNew")
# Status::Code::X, triton::common::Error::Code::X, TRITONSERVER_ERROR_X
CODE = r"(?:(?:\w+::)*Code::|TRITONSERVER_ERROR_)([A-Z_]+)"
# macro -> (level, what follows the literal as printed)
WRAPPERS = {
    "LOG_STATUS_ERROR": ("ERROR", ": {}"),
    "LOG_TRITONSERVER_ERROR": ("ERROR", ": {} - {}"),
    "FAIL_IF_ERR": ("FAIL", ": {} - {}"),
    "FAIL": ("FAIL", ""),
}


def _wrapped(text: str) -> list[tuple[str, str, int, str, str]]:
    """(text, style, line, level, function) of each error-reporting macro with a literal."""
    clean = _blank_comments(text)
    found = []
    names = "|".join(sorted(WRAPPERS, key=len, reverse=True))
    for call in re.finditer(rf"(?<![\w:#])({names})\s*\(", clean):
        if clean[max(0, call.start() - 8) : call.start()].rstrip().endswith("define"):
            continue
        parsed = _args(clean, call.end() - 1)
        if parsed is None or not parsed[0]:
            continue
        level, tail = WRAPPERS[call.group(1)]
        piece, literal = _piece_text(parsed[0][-1])
        if not literal or not piece.strip():
            continue
        style = "literal"
        if tail:
            piece = piece.replace("{", "{{").replace("}", "}}") + tail
            style = "brace"
        line = clean.count("\n", 0, call.start()) + 1
        found.append((piece, style, line, level, _enclosing_function(clean, call.start())))
    return found


UNESCAPED = {"FAIL", "ParseException"}


def _as_logged(text: str, level: str) -> str:
    """The text as Triton's logger prints it (JSON string escaping) at a logged level."""
    if level in UNESCAPED:
        return text
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def extract(checkout: Path, release: str) -> list[Message]:
    found: list[Message] = []
    for root in ROOTS:
        for path in sorted((checkout / root).rglob("*")):
            if path.suffix not in (".cc", ".h") or not path.is_file():
                continue
            rel = path.relative_to(checkout).as_posix()
            if rel.startswith(SKIP):
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            for m in bare_stream_messages(text, STREAMS) + coded_messages(text, ERRORS, CODE):
                text_ = _as_logged(m.text, m.level)
                found.append(
                    Message(EMITTER, release, text_, m.style, rel, m.line, m.level, m.function)
                )
            for m in concat_messages(text, ("ParseException",)):
                found.append(
                    Message(EMITTER, release, m.text, m.style, rel, m.line, m.level, m.function)
                )
            for body, style, line, level, function in _wrapped(text):
                body = _as_logged(body, level)
                found.append(Message(EMITTER, release, body, style, rel, line, level, function))
    return found
