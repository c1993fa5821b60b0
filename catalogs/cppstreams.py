"""Failure messages in C++ source written as streams or string concatenations.

Two shapes that `catalogs.cppsource` (macro arguments) does not cover:

- a logging stream, `LOG(ERROR) << "Failed to open " << path << ": " << reason;` (Horovod, glog,
  absl): the pieces between the top-level `<<` up to the statement's `;`, each string literal
  kept as text and any other expression as `{}`; `std::endl` is a new line. A head with a second
  argument (`LOG(ERROR, rank)`) is recorded with the level alone.
- an error built from a concatenation, `Status::UnknownError("Horovod has been shut down. " +
  reason)` or `throw std::runtime_error("..." + std::to_string(n))`: the pieces between the
  top-level `+` of the call's only argument.

The text is the literal pieces in order with `{}` for each expression (style `brace`, literal
braces doubled) or the literal alone (style `literal`); a statement with no literal text is
skipped. Nothing here decides a class: the emitter's mapping.yaml does.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Iterator

from catalogs.core.message import Message
from catalogs.cppsource import CppMessage, _args, _blank_comments, _enclosing_function

_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "'": "'"}
_NEWLINES = {"std::endl", "endl", "'\\n'"}
_WRAPPERS = re.compile(r"^(?:std::)?string\s*\((.*)\)$", re.S)


def _unescape(body: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body)


def _split_top(expr: str, operator: str) -> list[str]:
    """`expr` split on `operator` where it stands outside strings, chars and brackets."""
    pieces: list[str] = []
    depth = 0
    start = 0
    index = 0
    while index < len(expr):
        char = expr[index]
        if char == '"':
            found = _STRING.match(expr, index)
            index = found.end() if found else index + 1
            continue
        if char == "'":
            end = expr.find("'", index + (3 if expr[index + 1 : index + 2] == "\\" else 2))
            index = (end if end != -1 else index) + 1
            continue
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif (
            depth == 0
            and expr.startswith(operator, index)
            and (operator != "+" or expr[index + 1 : index + 2] not in ("+", "="))
        ):
            pieces.append(expr[start:index].strip())
            index += len(operator)
            start = index
            continue
        index += 1
    pieces.append(expr[start:].strip())
    return [piece for piece in pieces if piece]


def _statement_end(src: str, start: int) -> int:
    """Index of the `;` that ends the statement starting at `start` (outside strings/brackets)."""
    depth = 0
    index = start
    while index < len(src):
        char = src[index]
        if char == '"':
            found = _STRING.match(src, index)
            index = found.end() if found else index + 1
            continue
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth < 0:
                return index
        elif char == ";" and depth == 0:
            return index
        index += 1
    return len(src)


def _piece(expr: str) -> tuple[str, bool]:
    """(text, is_literal) of one piece: adjacent literals join, `std::string("x")` is x, a new
    line is `\\n`, anything else is `{}`."""
    expr = expr.strip()
    wrapped = _WRAPPERS.match(expr)
    if wrapped:
        expr = wrapped.group(1).strip()
    if expr in _NEWLINES:
        return "\n", True
    strings = list(_STRING.finditer(expr))
    if strings and _STRING.sub("", expr).strip() == "":
        return "".join(_unescape(found.group(1)) for found in strings), True
    return "{}", False


def _message(pieces: list[tuple[str, bool]]) -> tuple[str, str] | None:
    if not any(literal and text.strip() for text, literal in pieces):
        return None
    if all(literal for _, literal in pieces):
        return "".join(text for text, _ in pieces), "literal"
    text = "".join(
        text.replace("{", "{{").replace("}", "}}") if literal else text for text, literal in pieces
    )
    return text, "brace"


def _located(clean: str, at: int, message: tuple[str, str], level: str) -> CppMessage:
    """The message found at offset `at` of the comment-blanked source, with its line, level and
    enclosing function."""
    line = clean.count("\n", 0, at) + 1
    return CppMessage(message[0], message[1], line, level, _enclosing_function(clean, at))


def stream_messages(src: str, heads: Iterable[str] = ("LOG",)) -> list[CppMessage]:
    """Every `HEAD(LEVEL[, ...]) << piece << piece;` statement, its level the head's first
    argument (`ERROR`, `WARNING`, `FATAL`)."""
    clean = _blank_comments(src)
    names = "|".join(sorted(heads, key=len, reverse=True))
    found: list[CppMessage] = []
    for head in re.finditer(rf"\b({names})\s*\(", clean):
        if clean[max(0, head.start() - 8) : head.start()].rstrip().endswith("define"):
            continue
        parsed = _args(clean, head.end() - 1)
        if parsed is None or not parsed[0]:
            continue
        args, close = parsed
        rest = clean[close + 1 :]
        stream = re.match(r"\s*<<", rest)
        if stream is None:
            continue
        begin = close + 1 + stream.end()
        end = _statement_end(clean, begin)
        message = _message([_piece(p) for p in _split_top(clean[begin:end], "<<")])
        if message is None:
            continue
        found.append(_located(clean, head.start(), message, args[0].split("::")[-1].strip()))
    return found


def _calls(clean: str, calls: Iterable[str]) -> Iterator[tuple[re.Match[str], list[str]]]:
    """Each call of one of `calls` in the comment-blanked source, with its arguments."""
    names = "|".join(re.escape(name) for name in sorted(calls, key=len, reverse=True))
    for call in re.finditer(rf"(?<![\w:])({names})\s*\(", clean):
        parsed = _args(clean, call.end() - 1)
        if parsed is not None:
            yield call, parsed[0]


def concat_messages(src: str, calls: Iterable[str]) -> list[CppMessage]:
    """Every call `NAME(expr)` whose single argument is a `+` concatenation holding a literal
    (`Status::Aborted("..." + name)`, `std::runtime_error("...")`); the level is NAME's last
    `::` part (`Aborted`, `runtime_error`)."""
    clean = _blank_comments(src)
    found: list[CppMessage] = []
    for call, args in _calls(clean, calls):
        if len(args) != 1:
            continue
        message = _message([_piece(p) for p in _split_top(args[0], "+")])
        if message is None:
            continue
        found.append(_located(clean, call.start(), message, call.group(1).split("::")[-1]))
    return found


def bare_stream_messages(src: str, heads: dict[str, str]) -> list[CppMessage]:
    """Every `HEAD << piece << piece;` statement of a stream macro that takes no arguments
    (Triton's `LOG_ERROR << "failed to ..." << name;`); `heads` maps each macro to its level."""
    clean = _blank_comments(src)
    names = "|".join(re.escape(name) for name in sorted(heads, key=len, reverse=True))
    found: list[CppMessage] = []
    for head in re.finditer(rf"(?<![\w:])({names})\s*<<", clean):
        end = _statement_end(clean, head.end())
        message = _message([_piece(p) for p in _split_top(clean[head.end() : end], "<<")])
        if message is None:
            continue
        found.append(_located(clean, head.start(), message, heads[head.group(1)]))
    return found


_C_STR = re.compile(r"^(.*?)\s*\.\s*c_str\s*\(\s*\)$", re.S)


def _unwrap(expr: str) -> str:
    """The concatenation inside `(...)`, `std::string(...)` and `....c_str()` wrappers."""
    while True:
        expr = expr.strip()
        found = _C_STR.match(expr)
        if found is not None:
            expr = found.group(1)
            continue
        head = re.match(r"(?:std::)?string\s*(?=\()|(?=\()", expr)
        if head is not None and expr.endswith(")"):
            parsed = _args(expr, head.end())
            if parsed is not None and parsed[1] == len(expr) - 1 and len(parsed[0]) == 1:
                expr = parsed[0][0]
                continue
        return expr


def coded_messages(
    src: str, calls: Iterable[str], code: str = r"(?:\w+::)*(\w+)"
) -> list[CppMessage]:
    """Every call `NAME(CODE, expr)` whose message argument is a literal or a `+` concatenation
    holding one (`Status(Status::Code::INTERNAL, "failed to " + name)`,
    `TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, ("..." + x).c_str())`); the level is
    the first group of `code` matched on the first argument (by default its last `::` part)."""
    clean = _blank_comments(src)
    found: list[CppMessage] = []
    for call, args in _calls(clean, calls):
        if len(args) != 2:
            continue
        level = re.fullmatch(code, args[0].strip())
        if level is None:
            continue
        expr = _unwrap(args[1])
        message = _message([_piece(p) for p in _split_top(expr, "+")])
        if message is None:
            continue
        found.append(_located(clean, call.start(), message, level.group(1)))
    return found


def sink_messages(src: str, sinks: Iterable[str], level: str) -> list[CppMessage]:
    """Every `SINK << piece << piece;` statement into a named stream (`std::stringstream
    message;` later logged whole), recorded at `level`: each statement is one printed line
    when its pieces start a new line (Horovod's stall report)."""
    clean = _blank_comments(src)
    names = "|".join(re.escape(name) for name in sorted(sinks, key=len, reverse=True))
    found: list[CppMessage] = []
    for sink in re.finditer(rf"(?<![\w.:>])({names})\s*<<", clean):
        end = _statement_end(clean, sink.end())
        pieces = [_piece(p) for p in _split_top(clean[sink.end() : end], "<<")]
        while pieces and pieces[0] == ("\n", True):
            pieces = pieces[1:]
        message = _message(pieces)
        if message is None:
            continue
        found.append(_located(clean, sink.start(), message, level))
    return found


def logged_and_thrown(
    emitter: str,
    release: str,
    file: str,
    text: str,
    heads: Iterable[str],
    levels: Collection[str],
    error_calls: Iterable[str],
) -> list[Message]:
    """One C++ file's messages, as a glog/absl-style emitter prints them: its logging streams at
    one of `levels` (`heads`: the stream macros) and its errors built by concatenation
    (`error_calls`), as catalog messages of `emitter` at `release`."""
    found = [m for m in stream_messages(text, heads) if m.level in levels]
    found += concat_messages(text, error_calls)
    return [
        Message(emitter, release, m.text, m.style, file, m.line, m.level, m.function) for m in found
    ]
