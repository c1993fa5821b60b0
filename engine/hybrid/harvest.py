"""Reads the inputs a second time for what the signature library does not look at.

Consumes the paths (or a rewindable stdin) a diagnosis was made from; produces the SHA-256 of
every input and the abnormal-looking lines the rules did not match (exception lines, error
severities, signals, exhausted resources, non-zero exits, NaN), found by a small lexicon of
generic patterns in `lexicon/` run through the same matcher as the rules. Lines logged at
warning level or below are left out: they are the chatter every healthy run prints.
"""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import BinaryIO

from denpex.events import Match
from denpex.ingest.attribution import split_prefixes
from denpex.ingest.sources import READ_ERRORS, Collector, Input, iter_inputs
from denpex.match.library import load_library
from denpex.match.scan import Matcher

_BELOW_ERROR = re.compile(
    r"^(?:\S+ )?\[?[WID]\d{4} \d{2}:\d{2}:\d{2}"  # glog warning / info / debug
    r"|^\[[WID] "  # PyTorch C++ warning prefix: [W socket.cpp:...]
    r"|\b(?:WARN(?:ING)?|INFO|DEBUG|NOTICE)\b"
    r"|\b[A-Z]\w*Warning\b"
)
_DRAIN_BLOCK = 1024 * 1024


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


def is_below_error(text: str) -> bool:
    return bool(_BELOW_ERROR.search(split_prefixes(text).message))


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
        for match in scanned.matches:
            key = (match.event.source, match.event.line)
            if key in seen or is_below_error(match.event.text):
                continue
            seen.add(key)
            found.append(match)
    return Harvest(digests=digests, matches=found, warnings=collector.warnings)
