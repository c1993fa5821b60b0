"""Enroot's failure messages: the `[ERROR]` and `[WARN]` lines its bash runtime prints and the
errors of its C helpers (enroot-switchroot, enroot-nsenter, enroot-mount, ...).

Reads an enroot release tree. The bash side (`enroot.in`, `src/*.sh`, `conf/hooks/**/*.sh`)
prints through `common::log` (src/common.sh: `printf "%s %b\n" "[ERROR]" "${msg}"`):
`common::err "..."` logs at ERROR and exits, `common::log WARN "..."` / `common::log ERROR "..."`
log at that level; a `printf "...\n" ... >&2` with a literal format prints the text alone (level
`stderr`). The message is the double-quoted argument with every expansion (`${var}`, `$(cmd)`,
`$1`, `$?`) written as the `%s` it prints like. `common::log WARN -` relays another command's
output line by line and is not a message of enroot's own.

The C helpers report through err.h: `err(status, fmt, ...)` prints "<program>: <fmt>: <strerror>",
`errx` the same without the strerror, `warn`/`warnx` likewise without exiting; `level` is the
program (the file's name). `warndbg` only prints under ENROOT_DEBUG and is left out.
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core.message import Message
from catalogs.csource import find_calls

EMITTER = "enroot"
SHELL_LEVELS = {"err": "ERROR"}
_SHELL_CALL = re.compile(r'common::(?:err|log\s+(?P<level>WARN|ERROR))\s+"')
_PRINTF = re.compile(r'\bprintf\s+"(?P<fmt>(?:[^"\\$]|\\.)*)"[^\n]*>&2')
C_CALLS = {"err": 1, "errx": 1, "warn": 0, "warnx": 0}
ERRNO_APPENDED = {"err", "warn"}


def _bash_string(source: str, start: int) -> tuple[str, int] | None:
    """The double-quoted bash string whose first character (after the quote) is at `start`, as a
    printf format: literal text with `%` doubled, each expansion a `%s`; and the index after it."""
    out: list[str] = []
    i = start
    while i < len(source):
        c = source[i]
        if c == '"':
            return "".join(out), i + 1
        if c == "\\" and i + 1 < len(source):
            nxt = source[i + 1]
            out.append(nxt if nxt in '"\\$`' else c + nxt)
            i += 2
            continue
        if c == "$":
            end = _expansion_end(source, i)
            if end is None:
                return None
            out.append("%s")
            i = end
            continue
        if c == "`":
            end = source.find("`", i + 1)
            if end < 0:
                return None
            out.append("%s")
            i = end + 1
            continue
        out.append("%%" if c == "%" else c)
        i += 1
    return None


def _expansion_end(source: str, i: int) -> int | None:
    """The index after the expansion that starts with `$` at `i`."""
    nxt = source[i + 1] if i + 1 < len(source) else ""
    if nxt in "({":
        close = ")" if nxt == "(" else "}"
        depth, j, quote = 0, i + 1, ""
        while j < len(source):
            ch = source[j]
            if quote:
                if ch == "\\":
                    j += 1
                elif ch == quote:
                    quote = ""
            elif ch in "\"'":
                quote = ch
            elif ch == nxt:
                depth += 1
            elif ch == close:
                depth -= 1
                if depth == 0:
                    return j + 1
            j += 1
        return None
    word = re.match(r"[A-Za-z_]\w*|[0-9?@*#!$-]", source[i + 1 :])
    return i + 1 + word.end() if word else i + 1


def _line(source: str, offset: int) -> int:
    return source.count("\n", 0, offset) + 1


def _function(source: str, offset: int) -> str:
    starts = list(re.finditer(r"^([\w:.-]+)\s*\(\)\s*\{", source[:offset], re.M))
    return starts[-1].group(1) if starts else ""


def _shell(checkout: Path, path: Path, release: str) -> list[Message]:
    source = path.read_text(encoding="utf-8", errors="replace")
    rel = path.relative_to(checkout).as_posix()
    out: list[Message] = []
    for call in _SHELL_CALL.finditer(source):
        parsed = _bash_string(source, call.end())
        if parsed is None:
            continue
        text = parsed[0].strip()
        if not text or text == "%s":
            continue
        out.append(
            Message(
                EMITTER,
                release,
                text,
                "printf",
                rel,
                _line(source, call.start()),
                call.group("level") or "ERROR",
                _function(source, call.start()),
            )
        )
    for call in _PRINTF.finditer(source):
        fmt = call.group("fmt")
        if fmt.startswith("\\r") or not fmt.endswith("\\n"):
            continue  # progress bars redraw the same line
        text = fmt[: -len("\\n")]
        if not re.sub(r"%[a-z]", "", text).strip():
            continue  # common::log printing another message (format "%s %b")
        out.append(
            Message(
                EMITTER,
                release,
                text,
                "printf" if "%" in text else "literal",
                rel,
                _line(source, call.start()),
                "stderr",
                _function(source, call.start()),
            )
        )
    return out


def _helpers(checkout: Path, path: Path, release: str) -> list[Message]:
    source = path.read_text(encoding="utf-8", errors="replace")
    out: list[Message] = []
    for call in find_calls(source, C_CALLS, format_arg=C_CALLS):
        text = call.text.rstrip("\n")
        if call.name in ERRNO_APPENDED:
            text += ": %s"
        out.append(
            Message(
                EMITTER,
                release,
                text,
                "printf" if "%" in text else "literal",
                path.relative_to(checkout).as_posix(),
                call.line,
                path.stem,
                call.function,
            )
        )
    return out


def extract(checkout: Path, release: str) -> list[Message]:
    out: list[Message] = []
    shell = [checkout / "enroot.in", *sorted((checkout / "src").glob("*.sh"))]
    shell += sorted((checkout / "conf/hooks").rglob("*.sh"))
    for path in shell:
        if path.is_file():
            out += _shell(checkout, path, release)
    for path in sorted((checkout / "bin").glob("*.c")):
        out += _helpers(checkout, path, release)
    return sorted(set(out))
