"""Undoes a terminal's hard wrap in a pasted log.

A log copied out of a terminal window (or a tmux/screen pane, or a notebook's output cell) comes
with every line longer than the window cut into pieces exactly as wide as the window. Signatures
are written for the line the program printed, so a watchdog timeout cut after "Timeo" matches
nothing, and a catalog pattern never sees its message whole.

Consumes the head of an input (the bytes already read to sniff its kind) to decide whether the
input is wrapped and at which width; produces a stream that puts the pieces back together. The
decision is conservative: a width is believed only when no line is longer than it, and a line of
that width is joined to the next only when the next cannot be the start of a record of its own
(a timestamp, a prefix, a log level, a traceback line, a line shaped like the first).
"""

from __future__ import annotations

import io
import itertools
import re
from collections import Counter
from dataclasses import dataclass
from typing import BinaryIO

from denpex.ingest.lines import decode

MIN_WIDTH = 60
"""Narrower windows are rare, and lines of 40-60 characters repeat too often by chance."""

_BLOCK = 1 << 20
_LONGEST = 16 << 20
"""A line longer than this is no window's piece: it passes on as it comes (bounded memory)."""

# What a line a program printed on its own starts with. A continuation piece starts anywhere
# inside a message, so most of these never begin one; the rest (a bracket, a word and a colon)
# may, and then the join is missed, which only leaves the input as it was.
_RECORD_START = re.compile(
    r"""
    [\[(<{#|+*=>~-]                                   # prefixes, frames, tables, rules, markers
    | \d{4}[-/.]\d{1,2}[-/.]\d{1,2}                   # ISO and similar dates
    | \d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}[\sT]            # day/month dates
    | \d{1,2}:\d{2}:\d{2}                             # clock times
    | [A-Z][a-z]{2}\s+[A-Z]?[a-z]{0,2}\s*\d{1,2}\s    # syslog and ctime dates
    | [IWEFD]\d{3,4}\s                                 # glog/absl heads
    | (?:DEBUG|INFO|NOTICE|WARN(?:ING)?|ERROR|CRITICAL|FATAL|TRACE)\b
    | Traceback\b | File\s" | During\shandling | The\sabove\sexception
    | [\w.]*(?:Error|Exception|Warning|Interrupt|Exit|Fault|Failure)\b
    | [\w.-]+:\d+:\d+\s\[                              # NCCL's host:pid:tid [dev]
    | [\w./-]+:(?:\s|$)                                # program: message (srun:, slurmstepd:)
    | \w+=                                             # key=value records
    """,
    re.VERBOSE,
)
_SHAPE = str.maketrans(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    "a" * 52 + "9" * 10,
)


def _shape(text: str) -> str:
    return text[:8].translate(_SHAPE)


_BORDERS = frozenset("│┃║╭╮╰╯─━═┌┐└┘├┤┬┴┼|+")
"""Characters a panel's or a table's row starts with."""
_RULE = _BORDERS | frozenset("=*#_.~-")
"""Characters a horizontal rule is drawn with."""


def _ruled(piece: str) -> bool:
    """A panel's or a table's row, or a rule: never a piece of a longer line."""
    return piece[:1] in _BORDERS or all(c.isspace() or c in _RULE for c in piece[:3])


def continues(piece: str, following: str) -> bool:
    """Whether `following` reads as the rest of `piece` rather than as a line of its own."""
    if following.startswith(" ") and not piece.endswith(" "):
        # The window broke the line at a space: the space went to the continuation.
        following = following[1:]
    if not following or following[0].isspace() or _RECORD_START.match(following):
        return False
    if _ruled(piece):
        return False
    return _shape(piece) != _shape(following)


@dataclass(frozen=True, slots=True)
class Wrap:
    """How an input was wrapped: the window's width, and whether the window cut lines wherever
    the width ran out (a terminal, `cut`) or broke them between words (a console library such as
    rich, or a pager)."""

    width: int
    cut: bool

    def joint(self, piece: str, following: str) -> str | None:
        """What goes between `piece` and `following` when they are one line ("" after a cut, a
        space after a break, whose space the break consumed), None when `following` stands
        alone."""
        if len(piece) > self.width or not continues(piece, following):
            return None
        if self.cut:
            return "" if len(piece) == self.width else None
        if piece.endswith(" ") or 4 * len(piece) < 3 * self.width or "  " in piece.strip():
            return None  # short, padded, or a table's row (columns are runs of spaces)
        word = following.lstrip(" ").split(" ", 1)[0]
        return " " if len(piece) + 1 + len(word) > self.width else None


def wrap_of(head: bytes) -> Wrap | None:
    """How `head` was wrapped, or None when it does not read as wrapped.

    The width is the longest line's, believed when at least two lines fill it (a window shows
    several full lines: pieces of cut lines, a panel's borders). The window cut lines when at
    least two full-width lines, and half of them, run on into the next; it broke them between
    words when at least two lines end where the next word would not have fit. The head's last
    line may be cut by the sniffing read, so it is left out.
    """
    lines = [decode(raw) for raw in head.split(b"\n")[:-1]]
    lengths = Counter(len(line) for line in lines if len(line) >= MIN_WIDTH)
    if not lengths:
        return None
    width = max(lengths)
    if lengths[width] < 2:
        return None
    for wrap in (Wrap(width, cut=True), Wrap(width, cut=False)):
        joins = sum(
            wrap.joint(line, following) is not None for line, following in itertools.pairwise(lines)
        )
        if joins >= 2 and (not wrap.cut or 2 * joins >= lengths[width]):
            return wrap
    return None


class Unwrapped(io.RawIOBase):
    """`inner` with each wrapped line joined to its continuation (see `Wrap.joint`).

    Reads ahead one line at a time (a join depends on the next line), so at most one line and a
    block are held. `joins` counts the pieces put back together.
    """

    def __init__(self, inner: BinaryIO, wrap: Wrap) -> None:
        self._inner = inner
        self._wrap = wrap
        self._pending = b""  # bytes read but not yet split into complete lines
        self._held: bytes | None = None  # the last complete line, waiting for its successor
        self._out = bytearray()
        self._ended = False
        self.joins = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:  # type: ignore[override]
        while not self._ended and (size < 0 or len(self._out) < size):
            self._fill()
        if size < 0 or size >= len(self._out):
            data, self._out = bytes(self._out), bytearray()
            return data
        data = bytes(self._out[:size])
        del self._out[:size]
        return data

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def _fill(self) -> None:
        block = self._inner.read(_BLOCK)
        if not block:
            self._ended = True
            if self._held is not None:
                self._out += self._held
                self._held = None
            self._out += self._pending
            self._pending = b""
            return
        data = self._pending + block
        cut = data.rfind(b"\n")
        if cut < 0 and len(data) > _LONGEST:
            if self._held is not None:
                self._out += self._held
                self._held = None
            self._out += data
            self._pending = b""
            return
        if cut < 0:
            self._pending = data
            return
        self._pending = data[cut + 1 :]
        for line in data[: cut + 1].splitlines(keepends=True):
            self._take(line)

    def _take(self, line: bytes) -> None:
        held, self._held = self._held, line
        if held is None:
            return
        joined = self._joint(held, line)
        if joined is None:
            self._out += held
        else:
            self.joins += 1
            self._out += held.rstrip(b"\r\n") + joined.encode()

    def _joint(self, held: bytes, line: bytes) -> str | None:
        # Fewer bytes than three quarters of the width means fewer characters too: no join.
        if 4 * len(held) < 3 * self._wrap.width:
            return None
        return self._wrap.joint(decode(held.rstrip(b"\n")), decode(line.rstrip(b"\n")))
