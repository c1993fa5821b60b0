"""Ray's C++ core (raylet, GCS server, core worker, object manager and plasma store, memory
monitor, gRPC clients): the failure messages of a pinned release (see source.yaml), read from
the checkout's excerpts of `src/ray`.

Ray's C++ prints through glog-style streams, one line per statement in the process's log file
(raylet.out, gcs_server.out, python-core-worker-*.log), re-printed on the driver by the log
monitor as `(raylet) [...]`:

- `RAY_LOG(LEVEL) << piece << ...;` (also `RAY_LOG_EVERY_MS(LEVEL, ms)`, `RAY_LOG_EVERY_N`):
  level ERROR, WARNING, FATAL or INFO; `.WithField(...)` between the head and the stream only
  adds `key=value` context to the line and is read past;
- `RAY_CHECK(cond) << ...`, `RAY_CHECK_OK(status) << ...` and the comparison checks
  (`RAY_CHECK_EQ` ...): a fatal line, "Check failed: <cond> <message>" (level CHECK; a bare
  check without a message is an internal invariant and is not read);
- `RAY_EVENT(LEVEL, label) << ...`: the same text written to the event log;
- a text built in a stream and then logged, published to the drivers or put in an exception
  (`error_message << ...;`, `oss << ...;`): level REPORT;
- the reason a node, worker or actor died, as GCS records it and the driver's exceptions quote
  it (`set_reason_message(...)`, `set_error_message(...)`, `set_exit_detail(...)`), a worker's
  exit detail (the last argument of `DisconnectClient(...)` / `DestroyWorker(...)`, or a
  `std::string ..._msg = ...;` kept for it): level REASON;
- an error `Status` (`Status::IOError(...)`, `Status::ObjectStoreFull(...)`), printed as
  "<Code>: <message>" where it is logged or raised: the code is the level.

A piece that is not a literal is `{}` (style `brace`); `absl::StrCat(...)` and `std::string(...)`
are read through, and `absl::StrFormat(fmt, ...)` is its format with each conversion as `{}`.
Nothing here decides a class: mapping.yaml does.
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core.message import Message
from catalogs.cppsource import _args, _blank_comments, _enclosing_function
from catalogs.cppstreams import _message, _split_top, _statement_end, _unescape

EMITTER = "ray_core"
ROOT = "src/ray"
SUFFIXES = {".cc", ".h"}
LOG_HEADS = ("RAY_LOG", "RAY_LOG_EVERY_MS", "RAY_LOG_EVERY_N", "RAY_EVENT")
CHECK_HEADS = (
    "RAY_CHECK",
    "RAY_CHECK_OK",
    "RAY_CHECK_EQ",
    "RAY_CHECK_NE",
    "RAY_CHECK_LE",
    "RAY_CHECK_LT",
    "RAY_CHECK_GE",
    "RAY_CHECK_GT",
)
REASON_CALLS = ("set_reason_message", "set_error_message", "set_exit_detail")
# a worker's exit detail, handed to the call that disconnects or destroys it (its last argument)
DETAIL_CALLS = ("DisconnectClient", "DestroyWorker")
LEVELS = {"ERROR", "WARNING", "FATAL", "INFO"}
_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
_CONVERSION = re.compile(r"%[-+ #0-9.*]*(?:hh|h|ll|l|z|j|t|L)?[diouxXeEfgGcspn]")
_WITH_FIELD = re.compile(r"\)\s*\.\s*WithField\s*\(")
_SINK = re.compile(r"(?m)^[ \t]*([a-z_][a-z0-9_]*)\s*<<")
_STATUS = re.compile(r"(?<![\w:])Status::([A-Z]\w*)\s*\(")
# `std::string msg = "...";`: a detail or message kept in a variable, then logged or recorded
_NAMED_TEXT = re.compile(
    r"(?m)^[ \t]*(?:const\s+)?std::string\s+\w*(?:msg|message|detail|reason)\w*\s*=\s*"
)


def _drop_fields(src: str) -> str:
    """`RAY_LOG(INFO).WithField(a).WithField("k", v) << ...` read as `RAY_LOG(INFO) << ...`
    (blanked with spaces, so offsets and line numbers stay)."""
    while True:
        found = _WITH_FIELD.search(src)
        if found is None:
            return src
        parsed = _args(src, found.end() - 1)
        if parsed is None:
            return src
        close = parsed[1]
        start = found.start() + 1
        src = src[:start] + re.sub(r"[^\n]", " ", src[start : close + 1]) + src[close + 1 :]


def _pieces(expr: str) -> list[tuple[str, bool]]:
    """(text, is_literal) pieces of one streamed or concatenated expression."""
    expr = expr.strip()
    while expr.startswith("(") and expr.endswith(")"):
        parsed = _args(expr, 0)
        if parsed is None or parsed[1] != len(expr) - 1 or len(parsed[0]) != 1:
            break
        expr = parsed[0][0].strip()
    call = re.match(r"(absl::StrCat|absl::StrFormat|std::string)\s*\(", expr)
    if call is not None:
        parsed = _args(expr, call.end() - 1)
        if parsed is not None and parsed[1] == len(expr) - 1 and parsed[0]:
            args = parsed[0]
            if call.group(1) == "absl::StrFormat":
                out: list[tuple[str, bool]] = []
                for text, literal in _pieces(args[0]):
                    if not literal:
                        out.append((text, literal))
                        continue
                    for i, part in enumerate(_CONVERSION.split(text)):
                        if i:
                            out.append(("{}", False))
                        if part:
                            out.append((part, True))
                return out
            return [piece for arg in args for piece in _pieces(arg)]
    parts = _split_top(expr, "+")
    if len(parts) > 1:
        return [piece for part in parts for piece in _pieces(part)]
    if expr in ("std::endl", "'\\n'"):
        return [("\n", True)]
    strings = list(_STRING.finditer(expr))
    if strings and _STRING.sub("", expr).strip() == "":
        return [("".join(_unescape(s.group(1)) for s in strings), True)]
    return [("{}", False)]


def _stream(clean: str, begin: int) -> tuple[str, str] | None:
    end = _statement_end(clean, begin)
    return _message([p for part in _split_top(clean[begin:end], "<<") for p in _pieces(part)])


def cpp_messages(src: str) -> list[tuple[str, str, int, str, str]]:
    """(text, style, line, level, function) of each failure statement of one file."""
    clean = _drop_fields(_blank_comments(src))
    found: list[tuple[str, str, int, str, str]] = []

    def add(at: int, message: tuple[str, str] | None, level: str) -> None:
        if message is not None:
            line = clean.count("\n", 0, at) + 1
            found.append((*message, line, level, _enclosing_function(clean, at)))

    heads = "|".join(sorted((*LOG_HEADS, *CHECK_HEADS), key=len, reverse=True))
    for head in re.finditer(rf"(?<![\w#])({heads})\s*\(", clean):
        parsed = _args(clean, head.end() - 1)
        if parsed is None:
            continue
        args, close = parsed
        stream = re.match(r"\s*<<", clean[close + 1 :])
        if stream is None:
            continue
        if head.group(1) in CHECK_HEADS:
            level = "CHECK"
        else:
            level = args[0].split("::")[-1].strip() if args else ""
            if level not in LEVELS:
                continue
        add(head.start(), _stream(clean, close + 1 + stream.end()), level)
    for sink in _SINK.finditer(clean):
        add(sink.start(1), _stream(clean, sink.end()), "REPORT")
    for call in re.finditer(rf"(?<![\w])({'|'.join(REASON_CALLS)})\s*\(", clean):
        parsed = _args(clean, call.end() - 1)
        if parsed is not None and len(parsed[0]) == 1:
            add(call.start(), _message(_pieces(parsed[0][0])), "REASON")
    for call in re.finditer(rf"(?<![\w])({'|'.join(DETAIL_CALLS)})\s*\(", clean):
        parsed = _args(clean, call.end() - 1)
        if parsed is not None and len(parsed[0]) >= 3:
            add(call.start(), _message(_pieces(parsed[0][-1])), "REASON")
    for named in _NAMED_TEXT.finditer(clean):
        end = _statement_end(clean, named.end())
        add(named.start(), _message(_pieces(clean[named.end() : end])), "REASON")
    for call in _STATUS.finditer(clean):
        parsed = _args(clean, call.end() - 1)
        if parsed is not None and len(parsed[0]) == 1:
            add(call.start(), _message(_pieces(parsed[0][0])), call.group(1))
    found.sort(key=lambda m: (m[2], m[0]))
    return found


def extract(checkout: Path, release: str) -> list[Message]:
    found: list[Message] = []
    root = checkout / ROOT
    for path in sorted(root.rglob("*")):
        if path.suffix not in SUFFIXES or not path.is_file():
            continue
        rel = path.relative_to(checkout).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        for body, style, line, level, function in cpp_messages(text):
            found.append(Message(EMITTER, release, body, style, rel, line, level, function))
    return found
