"""Two interchangeable scanners that find candidate lines for every pattern in one buffer.

Consumes the library's patterns and raw byte buffers; produces, per buffer, the start offsets of
lines on which a pattern may match. Hyperscan does this for all patterns in one pass over the
bytes; the pure-`re` backend is the portable stand-in where Hyperscan is unavailable.

Both backends only propose lines. `scan.py` confirms each proposal with Python's `re` on the
isolated line, so a line is reported exactly when `re.search(pattern, line)` matches. That makes
the two backends agree by construction as long as each proposes a superset of the true lines,
which the differential test checks over every example in the library.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import re
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import NamedTuple, Protocol

from denpex.errors import RulesError

try:  # Hyperscan is a compiled extension; the re backend keeps denpex working without it.
    import hyperscan
except ImportError:  # pragma: no cover - exercised only on machines without the wheel
    hyperscan = None

try:  # POSIX: a process building a cache file holds its lock (`building`).
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None


class PatternSpec(NamedTuple):
    """One pattern as the scanners see it: the regex, its flags and its required literals.
    A named tuple: a library builds 30,000 of them at every start."""

    regex: str
    caseless: bool
    keywords: tuple[str, ...]


LineStarts = dict[int, list[int]]
"""Pattern index -> sorted start offsets of the lines it may match."""

LineEnds = dict[int, list[int]]
"""Pattern index -> sorted end offsets (the newline's, or the buffer's end) of the lines it may
match, for patterns that run to the end of their line (`[^\n]*$`)."""


class Scanner(Protocol):
    name: str

    def candidate_lines(self, buffer: bytes) -> LineStarts: ...

    def line_ends(self, buffer: bytes) -> LineEnds: ...


def line_start(buffer: bytes, offset: int) -> int:
    """The start offset of the line that holds `offset`."""
    return buffer.rfind(b"\n", 0, offset) + 1


class HyperscanScanner:
    """All patterns in one Hyperscan block-mode database; one pass per buffer."""

    name = "hyperscan"

    def __init__(self, patterns: Sequence[PatternSpec], cache_dir: Path | None = None) -> None:
        if hyperscan is None:
            raise RulesError("hyperscan is not installed; use the re backend")
        cached = _cache_path(patterns, cache_dir)
        database = _load_database(cached)
        if database is None:
            with building(cached):
                database = _load_database(cached)  # another process may have just written it
                if database is None:
                    database = _compile(patterns)
                    if cached is not None:
                        _save_database(database, cached)
        self._database = database
        # A scratch space serves one scan at a time: each thread (the API's worker pool scans
        # concurrently) gets its own clone, made once.
        self._prototype = hyperscan.Scratch(self._database)
        self._per_thread = threading.local()

    def _scratch(self) -> object:
        scratch = getattr(self._per_thread, "scratch", None)
        if scratch is None:
            scratch = self._per_thread.scratch = self._prototype.clone()
        return scratch

    def candidate_lines(self, buffer: bytes) -> LineStarts:
        found: LineStarts = {}
        covered_until: dict[int, int] = {}

        def on_match(pattern: int, _start: int, end: int, _flags: int, _context: object) -> None:
            # Hyperscan reports every end offset; one report per line is all we need.
            if end <= covered_until.get(pattern, -1):
                return None
            last = end - 1 if end > 0 else 0
            covered_until[pattern] = line_end(buffer, last)
            found.setdefault(pattern, []).append(line_start(buffer, last))
            return None

        self._database.scan(buffer, match_event_handler=on_match, scratch=self._scratch())
        return found

    def line_ends(self, buffer: bytes) -> LineEnds:
        """`candidate_lines` for patterns that all run to the end of their line: each report is
        one line and its end offset says which, so nothing is looked up per report. A scan
        that reports every line of a long run (progress lines, millions) costs one append
        each instead of two searches through the buffer."""
        found: LineEnds = {}

        def on_match(pattern: int, _start: int, end: int, _flags: int, _context: object) -> None:
            ends = found.get(pattern)
            if ends is None:
                found[pattern] = [end]
            else:
                ends.append(end)

        self._database.scan(buffer, match_event_handler=on_match, scratch=self._scratch())
        return found


def line_end(buffer: bytes, offset: int) -> int:
    """The end offset of the line that holds `offset` (its newline, or the buffer's end)."""
    end = buffer.find(b"\n", offset)
    return len(buffer) if end < 0 else end


def _ends_of(buffer: bytes, found: LineStarts) -> LineEnds:
    return {index: [line_end(buffer, s) for s in starts] for index, starts in found.items()}


def _compile(patterns: Sequence[PatternSpec]) -> object:
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    flags = [
        hyperscan.HS_FLAG_MULTILINE | (hyperscan.HS_FLAG_CASELESS if p.caseless else 0)
        for p in patterns
    ]
    try:
        database.compile(
            expressions=[p.regex.encode() for p in patterns],
            ids=list(range(len(patterns))),
            elements=len(patterns),
            flags=flags,
        )
    except hyperscan.error as error:
        raise RulesError(f"hyperscan cannot compile the library: {error}") from None
    return database


def _cache_path(patterns: Sequence[PatternSpec], cache_dir: Path | None) -> Path | None:
    """Where a compiled database for exactly these patterns, on this Hyperscan, is kept."""
    if cache_dir is None:
        return None
    hasher = hashlib.sha256(f"{hyperscan.__version__}\0{platform.machine()}".encode())
    # Each pattern as its length, flag and text: unambiguous, and hashed without building one
    # JSON document of 10,000 regexes at every start.
    hasher.update("".join(f"\0{len(p.regex)}:{p.caseless:d}:{p.regex}" for p in patterns).encode())
    key = hasher.hexdigest()
    return cache_dir / f"hyperscan-{key[:32]}.db"


@contextmanager
def building(target: Path | None) -> Iterator[None]:
    """Held while this process builds what is cached at `target` (a compiled database, a parsed
    library): another process about to build the same waits, then reads what this one wrote.
    Test workers, API replicas and commands started together each compiled the same library
    (a minute of CPU each); now one does. Without a cache, a lock file that cannot be written
    or `fcntl` (not POSIX), nothing is held: the build is only done twice, as before."""
    if target is None or fcntl is None:
        yield
        return
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle = target.with_name(f".{target.name}.lock").open("a+b")
    except OSError:
        yield
        return
    with handle:
        with suppress(OSError):  # a file system without locks: build anyway
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        yield  # the lock goes with the file's closing


def _load_database(path: Path | None) -> object | None:
    if path is None:
        return None
    try:
        return hyperscan.loadb(path.read_bytes(), hyperscan.HS_MODE_BLOCK)
    except (OSError, hyperscan.error, TypeError, ValueError):
        return None  # absent or unusable: compile afresh


def _save_database(database: object, path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_bytes(hyperscan.dumpb(database))
        temporary.replace(path)
    except (OSError, hyperscan.error):
        pass  # caching is an optimisation only


@functools.cache
def compiled_bytes(regex: str, flags: int) -> re.Pattern[bytes]:
    """A pattern compiled once per process: a process that compiles the library again (a
    curator's back-test, the API after a promotion) reuses what it compiled before."""
    return re.compile(regex.encode(), flags)


class RegexScanner:
    """Python `re` over the whole buffer, one pattern at a time, skipping absent literals."""

    name = "re"

    def __init__(self, patterns: Sequence[PatternSpec]) -> None:
        self._patterns = [
            (
                compiled_bytes(p.regex, re.MULTILINE | (re.IGNORECASE if p.caseless else 0)),
                tuple(k.encode() for k in p.keywords) if not p.caseless else (),
            )
            for p in patterns
        ]

    def candidate_lines(self, buffer: bytes) -> LineStarts:
        found: LineStarts = {}
        present = _KeywordTest.of(buffer)
        for index in self._worth_testing(present):
            compiled, keywords = self._patterns[index]
            if keywords and not any(map(present, keywords)):
                continue
            starts = self._lines_for(compiled, buffer)
            if starts:
                found[index] = starts
        return found

    GRAMS_FROM = 1000
    """A scanner of fewer patterns (a draft's, an overlay's) tests each keyword directly: the
    buffer's gram set (tens of milliseconds for a 256 KiB block of examples) costs more than
    the searches it would save; the back-test of one draft built it for every block."""

    def _worth_testing(self, present: _KeywordTest) -> Iterable[int]:
        """The patterns whose keywords may be in the buffer, in order: in a small buffer (a
        block of rule examples) those with a keyword whose indexed 4-byte gram the buffer
        holds, and those that cannot be ruled out that way; in a large one, or for a scanner of
        few patterns, every pattern."""
        if len(self._patterns) < self.GRAMS_FROM or present.grams is None:
            return range(len(self._patterns))
        by_gram, always = self._gram_index
        chosen = set(always)
        for gram in present.grams & by_gram.keys():
            chosen.update(by_gram[gram])
        return sorted(chosen)

    @functools.cached_property
    def _gram_index(self) -> tuple[dict[bytes, list[int]], list[int]]:
        """Built when a small buffer is first scanned (a log's chunks never need it)."""
        return _gram_index([keywords for _, keywords in self._patterns])

    @staticmethod
    def _lines_for(compiled: re.Pattern[bytes], buffer: bytes) -> list[int]:
        # Restart at the line after each hit's start, so every line that holds a match start
        # is proposed even when an earlier match ran across a newline.
        starts: list[int] = []
        position = 0
        size = len(buffer)
        while position < size:
            hit = compiled.search(buffer, position)
            if hit is None:
                break
            starts.append(line_start(buffer, hit.start()))
            next_line = buffer.find(b"\n", hit.start())
            if next_line < 0:
                break
            position = next_line + 1
        return starts

    def line_ends(self, buffer: bytes) -> LineEnds:
        return _ends_of(buffer, self.candidate_lines(buffer))


def _gram_index(
    keywords: Sequence[tuple[bytes, ...]],
) -> tuple[dict[bytes, list[int]], list[int]]:
    """(4-byte gram -> the patterns with a keyword that holds it, the patterns no gram rules
    out): each keyword is indexed by its gram that fewest keywords share, so a buffer without
    that gram is not searched for the keyword at all. A pattern with no keywords (a caseless
    one) or a keyword shorter than a gram is always tested."""
    gram = _KeywordTest.GRAM
    shared: Counter[bytes] = Counter()
    for listed in keywords:
        for keyword in listed:
            shared.update({keyword[i : i + gram] for i in range(len(keyword) - gram + 1)})
    by_gram: dict[bytes, list[int]] = {}
    always: list[int] = []
    for index, listed in enumerate(keywords):
        if not listed or any(len(k) < gram for k in listed):
            always.append(index)
            continue
        for keyword in listed:
            rarest = min(
                (keyword[i : i + gram] for i in range(len(keyword) - gram + 1)),
                key=shared.__getitem__,
            )
            by_gram.setdefault(rarest, []).append(index)
    return by_gram, always


class _KeywordTest:
    """Whether a keyword occurs in a buffer. Ten thousand patterns' keywords searched one by one
    through a buffer cost more than their regexes; in a small buffer (a block of rule examples)
    the set of its 4-byte substrings, built once, rules most of them out first."""

    GRAM = 4
    INDEXED_UP_TO = 256 * 1024
    """A larger buffer (a chunk of a log) is searched directly: the set would cost more."""

    _last = threading.local()

    @classmethod
    def of(cls, buffer: bytes) -> _KeywordTest:
        """The test of `buffer`, built once for the scanners that read the same buffer in turn
        (a matcher's pattern groups, the parts of a joined scanner). Only an immutable buffer
        small enough to be indexed is kept, one per thread."""
        last = getattr(cls._last, "test", None)
        if last is not None and last.buffer is buffer:
            return last
        test = cls(buffer)
        if test.indexed and type(buffer) is bytes:
            cls._last.test = test
        return test

    def __init__(self, buffer: bytes) -> None:
        self.buffer = buffer
        self.indexed = len(buffer) <= self.INDEXED_UP_TO
        self._grams: set[bytes] | None = None

    @property
    def grams(self) -> set[bytes] | None:
        """The buffer's 4-byte substrings, built when a scanner first asks (one of many
        patterns, `RegexScanner.GRAMS_FROM`); None for a buffer too large to index."""
        if self._grams is None and self.indexed:
            size, gram = len(self.buffer), self.GRAM
            self._grams = {self.buffer[i : i + gram] for i in range(size - gram + 1)}
        return self._grams

    def __call__(self, keyword: bytes) -> bool:
        grams, gram = self._grams, self.GRAM  # a prefilter only where already built
        if (
            grams is not None
            and len(keyword) >= gram
            and (keyword[:gram] not in grams or keyword[-gram:] not in grams)
        ):
            return False
        return keyword in self.buffer


class EmptyScanner:
    """Stands in for a database of no patterns, which Hyperscan refuses to compile."""

    def __init__(self, backend: str) -> None:
        self.name = backend

    def candidate_lines(self, buffer: bytes) -> LineStarts:
        return {}

    def line_ends(self, buffer: bytes) -> LineEnds:
        return {}


def available_backends() -> list[str]:
    return ["hyperscan", "re"] if hyperscan is not None else ["re"]


@functools.lru_cache(maxsize=8)
def _regex_scanner(patterns: tuple[PatternSpec, ...]) -> RegexScanner:
    """One scanner per set of patterns in a process (it holds nothing a scan changes): each
    matcher of the same library (a curator's back-tests, the API after a promotion, every
    test) otherwise built its gram index again, 2 CPU s for the whole library."""
    return RegexScanner(patterns)


def make_scanner(
    patterns: Sequence[PatternSpec], backend: str = "auto", cache_dir: Path | None = None
) -> Scanner:
    if backend == "auto":
        backend = "hyperscan" if hyperscan is not None else "re"
    if not patterns and backend in ("hyperscan", "re"):
        return EmptyScanner(backend)
    if backend == "hyperscan":
        return HyperscanScanner(patterns, cache_dir)
    if backend == "re":
        return _regex_scanner(tuple(patterns))
    raise RulesError(f"unknown matcher backend {backend!r}; choose hyperscan, re or auto")
