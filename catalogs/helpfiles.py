"""Messages in show-help files: the text Open MPI, PRRTE and PMIx print between dashed rules.

A help file (`help-orterun.txt`, `help-errmgr-base.txt`, ...) holds topics, each a `[name]`
line followed by the text `opal_show_help(file, topic, ...)` prints with its printf arguments
(`%s`, `%d`, `%lu`). Lines that start with `#` are comments (and PRRTE's `#include#file#topic`
directives, which splice another topic in and carry no text of their own). A topic's text runs
to the next `[name]` line; its surrounding blank lines are dropped, the inner layout is kept as
the program prints it. Each topic is one message, level `HELP`, its function the topic name.

Also read here: `opal_output(orte_clean_output, "...")` / `prte_output(prte_clean_output, ...)`
banners, the few user-facing reports printed without a help file (the TCP connection failure).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from catalogs.core.csource import find_calls
from catalogs.core.message import Message

_TOPIC = re.compile(r"^\[([^\]\s][^\]]*)\]\s*$")
_CLEAN_OUTPUT = re.compile(r"\b(?:opal|prte|pmix)_output\(\s*(?:orte|prte|pmix)_clean_output\s*,")
_PRINTF = re.compile(r"%(?:[-+ #0]*\d*(?:\.\d+)?[hlLqjzt]*[diouxXeEfFgGcsp]|%)")


@dataclass(frozen=True)
class Topic:
    name: str
    text: str
    line: int  # of the [name] line


def topics(text: str) -> Iterator[Topic]:
    """Every `[name]` topic of a help file with its text."""
    name: str | None = None
    start = 0
    body: list[str] = []

    def flush() -> Iterator[Topic]:
        if name is None:
            return
        lines = [line.rstrip() for line in body]
        while lines and not lines[0].strip():
            lines.pop(0)
        while lines and not lines[-1].strip():
            lines.pop()
        if lines:
            yield Topic(name, "\n".join(lines), start)

    for number, line in enumerate(text.splitlines(), start=1):
        found = _TOPIC.match(line)
        if found:
            yield from flush()
            name, start, body = found.group(1), number, []
        elif line.startswith("#"):
            continue
        elif name is not None:
            body.append(line)
    yield from flush()


def help_messages(
    checkout: Path, release: str, emitter: str, roots: Iterable[str], skip: tuple[str, ...] = ()
) -> list[Message]:
    """Every topic of every `help-*.txt` under the roots, and the clean-output banners of the C
    sources there."""
    messages: list[Message] = []
    for root in roots:
        base = checkout / root
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            relative = path.relative_to(checkout).as_posix()
            if not path.is_file() or relative.startswith(skip):
                continue
            if path.name.startswith("help-") and path.suffix == ".txt":
                text = path.read_text(encoding="utf-8", errors="replace")
                for topic in topics(text):
                    style = "printf" if _PRINTF.search(topic.text) else "literal"
                    messages.append(
                        Message(
                            emitter,
                            release,
                            topic.text,
                            style,
                            relative,
                            topic.line,
                            "HELP",
                            topic.name,
                        )
                    )
            elif path.suffix == ".c":
                messages.extend(_clean_output(path, relative, release, emitter))
    return messages


def _clean_output(path: Path, relative: str, release: str, emitter: str) -> Iterator[Message]:
    text = path.read_text(encoding="utf-8", errors="replace")
    if not _CLEAN_OUTPUT.search(text):
        return
    marked = _CLEAN_OUTPUT.sub("CLEAN_OUTPUT(", text)
    for call in find_calls(marked, ("CLEAN_OUTPUT",)):
        fmt = call.args[0].strip("\n") if call.args else ""
        if fmt:
            style = "printf" if _PRINTF.search(fmt) else "literal"
            yield Message(emitter, release, fmt, style, relative, call.line, "OUTPUT", "")
