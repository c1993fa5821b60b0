"""Reads the inputs a second time for what the signature library does not look at.

Consumes the paths (or a rewindable stdin) a diagnosis was made from; produces the SHA-256 of
every input and the abnormal-looking lines the rules did not match (exception lines, error
severities, signals, exhausted resources, non-zero exits, scheduler failure states, NaN),
found by a small lexicon of generic patterns in `lexicon/` run through the same matcher as the
rules and judged by `abnormal.is_abnormal` (by content, not only by level: a warning that
reports a failure is abnormal, the benign chatter the lexicon names is not).
"""

from __future__ import annotations

import hashlib
import io
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from itertools import groupby
from pathlib import Path
from typing import BinaryIO

from denpex.events import Match
from denpex.hybrid.abnormal import continues, is_abnormal, is_below_error
from denpex.ingest.sources import READ_ERRORS, Collector, Input, iter_inputs
from denpex.match.library import load_library
from denpex.match.scan import Matcher
from denpex.timeline.order import OrderedTimeline

_DRAIN_BLOCK = 1024 * 1024


__all__ = [
    "Harvest",
    "harvest",
    "is_below_error",
    "lexicon_matcher",
    "rewindable",
    "unexplained_lines",
]
SPOOL_IN_MEMORY = 64 * 1024 * 1024
CONTINUED_WITHIN = 2
"""A continuation line at most this many lines below the last message the lexicon saw
continues it (c10's stack: the message, "Exception raised from ...", "frame #0: ...")."""


@dataclass(frozen=True)
class Harvest:
    digests: dict[str, str]
    """Input display name -> SHA-256 of all its bytes."""
    matches: list[Match]
    """Abnormal lines, one match per line, in input order."""
    warnings: list[str] = field(default_factory=list)


@cache
def lexicon_matcher(backend: str = "auto") -> Matcher:
    """The matcher of the generic abnormal-line lexicon, compiled once per process."""
    lexicon = Path(str(resources.files("denpex.hybrid").joinpath("lexicon")))
    return Matcher(load_library(lexicon), backend)


class _HashingReader(io.RawIOBase):
    """Passes reads through while hashing them."""

    def __init__(self, inner: BinaryIO, hasher: hashlib._Hash) -> None:
        self._inner = inner
        self._hasher = hasher

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:  # type: ignore[override]
        data = self._inner.read(size)
        self._hasher.update(data)
        return data

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def drain(self) -> None:
        while self.read(_DRAIN_BLOCK):
            pass


def _hashed(item: Input, digests: dict[str, str]) -> Input:
    hasher = hashlib.sha256()

    @contextmanager
    def opened() -> Iterator[BinaryIO]:
        with item.open() as stream:
            reader = _HashingReader(stream, hasher)
            yield reader  # type: ignore[misc]
            try:
                reader.drain()  # binary inputs are only sniffed; hash all of them anyway
            except READ_ERRORS:
                return
            digests[item.name] = hasher.hexdigest()

    return replace(item, open=opened)


def harvest(
    paths: list[str],
    stdin: BinaryIO | None,
    *,
    skip: set[tuple[str, int]],
    matcher: Matcher,
    year: int | None,
) -> Harvest:
    """Digests and unmatched abnormal lines of every input. `skip` holds the (source, line)
    pairs the rules already matched; `year` is the one the rules' scan settled on for inputs
    whose timestamps carry none."""
    if stdin is not None:
        stdin.seek(0)
    collector = Collector([])
    digests: dict[str, str] = {}
    found: list[Match] = []
    seen: set[tuple[str, int]] = set(skip)
    for item in iter_inputs(paths, stdin, collector):
        scanned = matcher.scan_input(_hashed(item, digests), year)
        last: tuple[int, bool] | None = None  # line and judgement of the last message seen
        for line, matches in groupby(
            sorted(scanned.matches, key=lambda m: m.event.line), key=lambda m: m.event.line
        ):
            on_line = list(matches)
            carried = None
            if last is not None and line - last[0] <= CONTINUED_WITHIN:
                carried = last[1]
            verdicts = [is_abnormal(m.event.text, m.signature, carried) for m in on_line]
            if carried is None or not all(continues(m.signature) for m in on_line):
                last = (line, any(verdicts))
            else:
                last = (line, carried)
            key = (on_line[0].event.source, line)
            if key in seen or not any(verdicts):
                continue
            seen.add(key)
            found.append(on_line[verdicts.index(True)])
    return Harvest(digests=digests, matches=found, warnings=collector.warnings)


def rewindable(stdin: BinaryIO) -> BinaryIO:
    """A rewindable copy of stdin, so the inputs can be read a second time."""
    spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)  # noqa: SIM115
    shutil.copyfileobj(stdin, spool, 1024 * 1024)
    spool.seek(0)
    return spool  # type: ignore[return-value]


def year_of(timeline: OrderedTimeline) -> int | None:
    """The year the rules' scan settled on, for inputs whose timestamps carry none."""
    for match in timeline.matches:
        if match.event.time is not None and not match.event.time_inferred:
            return time.gmtime(match.event.time).tm_year
    return None


def unexplained_lines(
    paths: list[str], stdin: BinaryIO | None, backend: str = "auto"
) -> Callable[[OrderedTimeline], Sequence[Match]]:
    """The gate's question "did anything the rules missed go wrong?" for a rules-only
    diagnosis: the abnormal lines of the inputs that no signature matched. Asked only when no
    signature fired, so a settled diagnosis never reads its inputs twice."""

    def ask(timeline: OrderedTimeline) -> Sequence[Match]:
        return harvest(
            paths,
            stdin,
            skip={(m.event.source, m.event.line) for m in timeline.matches},
            matcher=lexicon_matcher(backend),
            year=year_of(timeline),
        ).matches

    return ask
