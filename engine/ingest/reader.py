"""Reads one input as a sequence of line-aligned chunks of bounded size.

Consumes a binary stream; produces `Chunk`s that end on a line boundary, each carrying the tail
of the previous chunk as history (so a traceback or a timestamp just before a chunk boundary is
still in view) and the line number of its first byte. Memory stays bounded whatever the input:
a line longer than `max_line` is cut, and the cut is counted, never fatal.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from denpex.ingest.sources import READ_ERRORS

CHUNK_SIZE = 8 * 1024 * 1024
HISTORY_SIZE = 64 * 1024
MAX_LINE = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Chunk:
    data: bytes
    scan_from: int
    """Offset in `data` where bytes not seen in an earlier chunk begin."""
    first_line: int
    """1-based line number of `data[0]`."""
    base_offset: int
    """Offset of `data[0]` in the whole input."""


@dataclass
class ReadReport:
    """What reading an input found out besides its content."""

    bytes: int = 0
    lines: int = 0
    cut_lines: int = 0
    error: str | None = None


def _history_of(complete: bytes) -> bytes:
    if len(complete) <= HISTORY_SIZE:
        return complete
    start = complete.find(b"\n", len(complete) - HISTORY_SIZE) + 1
    return complete[start:] if 0 < start < len(complete) else b""


def iter_chunks(
    stream: BinaryIO,
    report: ReadReport,
    *,
    chunk_size: int = CHUNK_SIZE,
    max_line: int = MAX_LINE,
) -> Iterator[Chunk]:
    carry = b""
    history = b""
    newlines_before = 0  # newlines in everything emitted so far, history included
    emitted = 0
    while True:
        try:
            block = stream.read(chunk_size)
        except READ_ERRORS as error:
            report.error = f"read stopped after {report.bytes} bytes ({error})"
            block = b""
        if not block:
            if carry:
                yield _chunk(history, carry, newlines_before, emitted)
                report.lines = newlines_before + carry.count(b"\n") + 1
            else:
                report.lines = newlines_before
            return
        report.bytes += len(block)
        data = carry + block
        cut = data.rfind(b"\n")
        if cut < 0 and len(data) < max_line:
            carry = data
            continue
        if cut < 0:
            complete, carry = data, b""
            report.cut_lines += 1
        else:
            complete, carry = data[: cut + 1], data[cut + 1 :]
        yield _chunk(history, complete, newlines_before, emitted)
        emitted += len(complete)
        newlines_before += complete.count(b"\n")
        history = _history_of(complete) if cut >= 0 else b""


def _chunk(history: bytes, fresh: bytes, newlines_before: int, emitted: int) -> Chunk:
    return Chunk(
        data=history + fresh,
        scan_from=len(history),
        first_line=newlines_before - history.count(b"\n") + 1,
        base_offset=emitted - len(history),
    )
