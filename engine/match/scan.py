"""Runs the signature library over inputs: one scanner pass per chunk, then confirmation.

Consumes a `Library` and `Input`s; produces, per input, the confirmed `Match`es (with events
built by ingest for the matched lines only), the input's summary, and any Flight Recorder dump
found among the inputs. In the same read, when asked, it hashes the input and runs a second,
generic pattern set (`AbnormalLines`) over the same chunks for the abnormal lines no signature
explains, so no input is ever read twice. On a line several signatures match, only those of the
highest priority are kept, so a specific signature is not doubled by a generic one. Repeated
matches are bounded: per signature, source and emitter the first and last few are kept and the
rest only counted.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import io
import re
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from denpex.events import Attribution, Event, Match
from denpex.ingest.attribution import attribution_from_path, looks_srun_labelled, split_prefixes
from denpex.ingest.kinds import BINARY, FR_DUMP, UNREADABLE, kind_of
from denpex.ingest.lines import (
    SourceContext,
    completed_event,
    decode,
    line_bounds,
    line_event,
    stamp_of_line,
)
from denpex.ingest.numbers import identifier
from denpex.ingest.reader import Chunk, ReadReport, iter_chunks
from denpex.ingest.sources import READ_ERRORS, Input, Rejoined
from denpex.ingest.timestamps import parse_stamp
from denpex.ingest.wrapping import Unwrapped, wrap_of
from denpex.progress.series import ProgressReader, ProgressRecord, ProgressScanner
from denpex.signatures.backends import LineEnds, LineStarts, Scanner, make_scanner
from denpex.signatures.library import Library, PatternRef
from denpex.signatures.signature import Role, Signature
from denpex.telemetry import HOST_FILE, SAMPLES_FILE, TelemetryReader

KEEP_EACH_END = 8
TEXT_BLOCK = 64 * 1024
CONTEXT_PER_WINDOW = 64
CONTEXT_WINDOW = 256 * 1024
MAX_DUMP_BYTES = 512 * 1024 * 1024
_HEAD_BYTES = 65536
_YEAR_UNKNOWN = 1970  # a `time` capture without a year is not trusted
_YEAR = re.compile(rb"(?<!\d)(20\d{2})-(?:0[1-9]|1[0-2])-(?:[0-2]\d|3[01])[T _]\d{2}:")


@dataclass(frozen=True, slots=True)
class _Pending:
    """A match whose event is not yet complete (`ingest.lines.completed_event`: the traceback
    above the line, a timestamp looked for around it): most repeated matches are only counted
    (`_Kept`), so only those kept pay for completing them."""

    match: Match
    untimed: bool
    """The line prints no timestamp of its own."""
    with_traceback: bool
    chunk: Chunk
    line_start: int

    def completed(self, context: SourceContext) -> Match:
        event = completed_event(
            self.match.event,
            self.untimed,
            self.chunk,
            self.line_start,
            context,
            self.with_traceback,
        )
        return replace(self.match, event=event)


@dataclass
class _Kept:
    first: list[Match | _Pending] = field(default_factory=list)
    last: deque[Match | _Pending] = field(default_factory=lambda: deque(maxlen=KEEP_EACH_END))
    seen: int = 0

    def add(self, match: Match | _Pending) -> None:
        self.seen += 1
        if len(self.first) < KEEP_EACH_END:
            self.first.append(match)
        else:
            self.last.append(match)

    def pending(self) -> list[_Pending]:
        return [m for m in (*self.first, *self.last) if isinstance(m, _Pending)]

    def settle(self, done: dict[int, Match]) -> None:
        """Each pending match replaced by its completed one in `done` (keyed by `id`)."""
        self.first = [done.get(id(m), m) for m in self.first]
        self.last = deque((done.get(id(m), m) for m in self.last), maxlen=KEEP_EACH_END)

    def matches(self) -> list[Match]:
        assert not self.pending(), "completed at the end of each chunk"
        return [m for m in (*self.first, *self.last) if isinstance(m, Match)]

    @property
    def dropped(self) -> int:
        return self.seen - len(self.first) - len(self.last)


def _complete_kept(kept: Iterable[_Kept], context: SourceContext) -> None:
    """Complete the pending matches still kept once a chunk is done (its data is still at hand),
    in input order, as the look-back's reuse of the previous one expects."""
    kept = list(kept)
    pending = sorted((p for k in kept for p in k.pending()), key=lambda p: p.match.event.offset)
    done = {id(p): p.completed(context) for p in pending}
    for k in kept:
        k.settle(done)


@dataclass
class ScannedInput:
    name: str
    relative: str
    kind: str
    bytes: int
    lines: int
    matches: list[Match]
    dropped: dict[tuple[str, int | None], int]
    """Matches counted but not kept, per (signature id, rank)."""
    dump: bytes | None = None
    warnings: list[str] = field(default_factory=list)
    who: Attribution = field(default_factory=Attribution)
    """What the input's path says about who wrote it."""
    first_time: float | None = None
    """The first timestamp among the input's opening lines, when it has one."""
    progress: list[ProgressRecord] = field(default_factory=list)
    """Training progress lines (step, loss, grad norm, ...), for the silent-failure checks."""
    progress_stride: int = 1
    """1 when every progress line was kept; else past its first lines the input's progress
    was sampled, 1 line in `progress_stride` (`ProgressReader`)."""
    telemetry: list[dict[str, Any]] = field(default_factory=list)
    """What `denpex run` sampled on the host (`telemetry.jsonl`) or said of its tools
    (`host.json`), as plain records (`denpex.telemetry.TelemetryReader`)."""
    abnormal: list[Match] = field(default_factory=list)
    """Lines no signature matched that `AbnormalLines` found and kept, in input order."""
    digest: str | None = None
    """SHA-256 of all the input's bytes, when asked for."""
    default_year: int | None = None
    """The year its timestamps that print none were read in (None: no line was read)."""
    year_stated: bool = False
    """Whether that year is the input's own (its opening lines print one), not the year of an
    earlier input or of the clock: a scan split across processes checks the others."""


@dataclass(frozen=True)
class AbnormalLines:
    """A generic pattern set run over the same chunks as the library, for the lines no
    signature explains, and the caller's judgement of one input's matches (those it keeps)."""

    matcher: Matcher
    judge: Callable[[list[Match], list[Match]], list[Match]]
    """(the generic matches of lines no signature explains, the input's signature matches) ->
    the generic matches kept."""
    never: Callable[[str, Signature], bool] | None = None
    """A line and signature the judgement rejects on their own: dropped before the line's
    event is built, unless another candidate line follows within `continued_within` lines
    (it may continue this one and take its judgement)."""
    continued_within: int = 0


class _Digest:
    """SHA-256 of what a stream yields, passed through unchanged; drained to the end when the
    scan stops reading early (a binary input is only sniffed, a dump may be over its bound)."""

    def __init__(self, inner: BinaryIO) -> None:
        self._inner = inner
        self._hasher = hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        data = self._inner.read(size)
        self._hasher.update(data)
        return data

    def hexdigest(self) -> str | None:
        try:
            while self.read(8 * 1024 * 1024):
                pass
        except READ_ERRORS:
            return None
        return self._hasher.hexdigest()


@dataclass(frozen=True, slots=True)
class _Confirmer:
    ref: PatternRef
    regex: re.Pattern[str]
    nearby: tuple[tuple[re.Pattern[str], int, bool], ...]
    """(regex, lines to look at, whether to look backwards)"""


class _PatternGroup:
    """Patterns scanned together: one scanner database and a confirmer per pattern, compiled
    when the scanner first finds the pattern's candidate line (a library holds 10,000 regexes;
    a log meets a few dozen of them)."""

    def __init__(
        self,
        refs: list[PatternRef],
        backend: str,
        thin: bool,
        cache_dir: Path | None,
        added_from: int | None = None,
    ) -> None:
        specs = [ref.spec for ref in refs]
        if added_from is None or added_from >= len(refs):
            self.scanner: Scanner = make_scanner(specs, backend, cache_dir)
        else:
            self.scanner = _Joined(
                make_scanner(specs[:added_from], backend, cache_dir),
                make_scanner(specs[added_from:], backend, cache_dir),
                added_from,
            )
        self.thin = thin
        self.refs = refs
        self._confirmers: list[_Confirmer | None] = [None] * len(refs)

    @functools.cached_property
    def _families(self) -> tuple[str, ...]:
        # From the ids: `ref.signature` would unpickle every signature of a cached library.
        return tuple(ref.signature_id.split(".", 1)[0] for ref in self.refs)

    def without(self, families: frozenset[str]) -> _PatternGroup:
        """This group less the patterns of `families`, on the same compiled scanner."""
        excluded = frozenset(i for i, family in enumerate(self._families) if family in families)
        if not excluded:
            return self
        twin = copy.copy(self)
        twin.scanner = _WithoutPatterns(self.scanner, excluded)
        return twin

    def confirmer(self, index: int) -> _Confirmer:
        confirmer = self._confirmers[index]
        if confirmer is None:  # two threads may both compile it; either result is the same
            ref = self.refs[index]
            confirmer = self._confirmers[index] = _Confirmer(
                ref=ref,
                regex=_compiled(ref.spec.regex, _flags(ref.spec.caseless)),
                nearby=tuple(
                    (
                        _compiled(n.regex, _flags(ref.spec.caseless)),
                        n.within,
                        n.direction == "before",
                    )
                    for n in ref.pattern.nearby
                ),
            )
        return confirmer


class _Joined:
    """Two compiled scanners read as one: the packaged library's and what was added to it
    (an overlay, a draft), whose pattern indexes follow the first's."""

    def __init__(self, first: Scanner, second: Scanner, offset: int) -> None:
        self.first, self.second, self.offset = first, second, offset
        self.name = first.name

    def candidate_lines(self, buffer: bytes) -> LineStarts:
        found = self.first.candidate_lines(buffer)
        for index, starts in self.second.candidate_lines(buffer).items():
            found[index + self.offset] = starts
        return found

    def line_ends(self, buffer: bytes) -> LineEnds:
        found = self.first.line_ends(buffer)
        for index, ends in self.second.line_ends(buffer).items():
            found[index + self.offset] = ends
        return found


class _WithoutPatterns:
    """A compiled scanner that no longer reports some of its patterns. The scanners report
    each pattern's lines on their own, so this reports what a scanner compiled without those
    patterns would."""

    def __init__(self, inner: Scanner, excluded: frozenset[int]) -> None:
        self.inner = inner
        self.name = inner.name
        self.excluded = excluded

    def candidate_lines(self, buffer: bytes) -> LineStarts:
        found = self.inner.candidate_lines(buffer)
        return {index: starts for index, starts in found.items() if index not in self.excluded}

    def line_ends(self, buffer: bytes) -> LineEnds:
        found = self.inner.line_ends(buffer)
        return {index: ends for index, ends in found.items() if index not in self.excluded}


class Matcher:
    """The compiled library: scanners for candidate lines and `re` confirmers for captures.

    Abnormal signatures (root causes and symptoms) are scanned over every byte. Context
    signatures (step markers, rank maps, exit summaries) can match a large share of a healthy
    log, so they are scanned over the first and the last CONTEXT_WINDOW bytes of each input
    only: that is where the job starts, where it failed and where launchers print summaries.
    """

    def __init__(
        self, library: Library, backend: str = "auto", cache_dir: Path | None = None
    ) -> None:
        self.library = library
        added = len(library.patterns) if library.added_from is None else library.added_from
        abnormal = [r for r in library.patterns if r.role is not Role.context]
        context = [r for r in library.patterns if r.role is Role.context]
        # Added signatures' patterns come after the packaged ones in each group, as in the
        # library: each group compiles the packaged part apart (see `Library.added_from`).
        packaged = library.patterns[:added]
        abnormal_from = sum(r.role is not Role.context for r in packaged)
        context_from = len(packaged) - abnormal_from
        self._abnormal = _PatternGroup(
            abnormal, backend, thin=False, cache_dir=cache_dir, added_from=abnormal_from
        )
        self._context = _PatternGroup(
            context, backend, thin=True, cache_dir=cache_dir, added_from=context_from
        )
        self._progress = ProgressScanner(backend, cache_dir)

    @property
    def backend(self) -> str:
        return self._abnormal.scanner.name

    def relabelled(self, library: Library) -> Matcher:
        """This compiled matcher for `library`, which holds the same signatures (in any order)
        under another label: an overlay written to disk after its draft was compiled."""
        mine = {s.id: s for s in self.library.signatures}
        theirs = {s.id: s for s in library.signatures}
        if mine != theirs:
            raise ValueError("the libraries hold different signatures")
        twin = copy.copy(self)
        twin.library = library
        return twin

    def without_families(self, families: Iterable[str]) -> Matcher:
        """This matcher less the signatures of `families` (an ablation), without compiling the
        smaller library: the same scanners, told to drop those patterns' lines."""
        dropped = frozenset(families)
        twin = copy.copy(self)
        twin.library = self.library.without_families(dropped)
        twin._abnormal = self._abnormal.without(dropped)
        twin._context = self._context.without(dropped)
        return twin

    @property
    def scanner(self) -> Scanner:
        """The scanner of the abnormal signatures, the one that reads every byte."""
        return self._abnormal.scanner

    def scan_input(
        self,
        item: Input,
        fallback_year: int | None = None,
        *,
        abnormal: AbnormalLines | None = None,
        digest: bool = False,
    ) -> ScannedInput:
        with item.open() as opened:
            stream: BinaryIO = _Digest(opened) if digest else opened  # type: ignore[assignment]
            scanned = self._scan_stream(item, stream, fallback_year, abnormal)
            if isinstance(stream, _Digest):
                scanned.digest = stream.hexdigest()
        return scanned

    def _scan_stream(
        self,
        item: Input,
        stream: BinaryIO,
        fallback_year: int | None,
        abnormal: AbnormalLines | None,
    ) -> ScannedInput:
        who = attribution_from_path(item.relative)
        report = ReadReport()
        try:
            head = stream.read(_HEAD_BYTES)
        except READ_ERRORS as error:
            return _unreadable(item, f"{item.name}: skipped, cannot be read ({error})")
        kind = kind_of(item.relative, who, head)
        body: io.RawIOBase = Rejoined(head, stream)
        if kind == FR_DUMP:
            return _dump_input(item, kind, body, who)
        if kind == BINARY:
            return _unreadable(
                item, f"{item.name}: skipped, binary data that is not a known format", kind
            )
        unwrapped: Unwrapped | None = None
        wrap = wrap_of(head) if kind != "telemetry" else None
        if wrap is not None:
            body = unwrapped = Unwrapped(body, wrap)
        stated_year = _first_year(head)
        context = SourceContext(
            name=item.name,
            who=who,
            default_year=stated_year or fallback_year or datetime.now(UTC).year,
            srun_labelled=looks_srun_labelled(
                [decode(line) for line in head.split(b"\n", 60)[:60]]
            ),
        )
        first_time = _first_time(head, context)
        kept: dict[tuple[str, int | None, int | None], _Kept] = {}
        generic: dict[tuple[str, int | None, int | None], _Kept] = {}

        def keep(
            matches: Iterator[Match | _Pending],
            into: dict[tuple[str, int | None, int | None], _Kept] = kept,
        ) -> None:
            for found in matches:
                match = found.match if isinstance(found, _Pending) else found
                key = (match.signature.id, match.event.rank, match.event.who.local_rank)
                into.setdefault(key, _Kept()).add(found)

        head_window: Chunk | None = None
        last: Chunk | None = None
        progress = ProgressReader(self._progress, context)
        name = PurePosixPath(item.relative).name
        telemetry = (
            TelemetryReader(name)
            if kind == "telemetry" and name in (SAMPLES_FILE, HOST_FILE)
            else None
        )
        for chunk in iter_chunks(body, report):
            if telemetry is not None:
                telemetry.read(
                    chunk.data[chunk.scan_from :],
                    chunk.first_line + chunk.data.count(b"\n", 0, chunk.scan_from),
                )
            keep(self._matches_in(chunk, context, self._abnormal, defer=True))
            # Silent-failure hook: progress lines, read in the same pass over the bytes.
            progress.read(chunk)
            if abnormal is not None:
                lexicon = abnormal.matcher._abnormal
                keep(
                    abnormal.matcher._matches_in(
                        chunk, context, lexicon, defer=True, drop=abnormal
                    ),
                    generic,
                )
            _complete_kept([*kept.values(), *generic.values()], context)
            if head_window is None:
                head_window = _head_window(chunk)
            last = chunk
        if last is not None and head_window is not None:
            # Step markers fill a window: only the first and last few of each are kept, and
            # only those are completed.
            for window in _context_windows(head_window, last):
                keep(self._matches_in(window, context, self._context, defer=True))
            _complete_kept(kept.values(), context)
        warnings = [f"{item.name}: {report.error}"] if report.error else []
        if report.cut_lines:
            warnings.append(
                f"{item.name}: {report.cut_lines} line(s) longer than 16 MiB were read in pieces"
            )
        if unwrapped is not None and unwrapped.joins:
            warnings.append(
                f"{item.name}: {unwrapped.joins} line(s) wrapped at {wrap.width} columns were "
                "joined back; line numbers count the joined lines"
            )
        matches = without_claimed(
            sorted((m for k in kept.values() for m in k.matches()), key=lambda m: m.event.offset)
        )
        dropped = {(key[0], key[1]): k.dropped for key, k in kept.items() if k.dropped}
        explained = {m.event.line for m in matches}
        seen_lines: set[int] = set()
        found = []
        for match in sorted(
            (m for k in generic.values() for m in k.matches()), key=lambda m: m.event.offset
        ):
            if match.event.line not in explained and match.event.line not in seen_lines:
                seen_lines.add(match.event.line)
                found.append(match)
        if abnormal is not None:
            found = abnormal.judge(found, matches)
        return ScannedInput(
            item.name,
            item.relative,
            kind,
            report.bytes,
            report.lines,
            matches,
            dropped,
            warnings=warnings,
            who=who,
            first_time=first_time,
            progress=progress.records(),
            progress_stride=progress.stride,
            telemetry=telemetry.records() if telemetry is not None else [],
            abnormal=found,
            default_year=context.default_year,
            year_stated=stated_year is not None,
        )

    def scan_text(self, text: str, name: str = "<text>", *, keep_all: bool = False) -> list[Match]:
        """Matches in a piece of text, as if it were a whole input (used by rule examples).

        With `keep_all`, every confirmed signature is reported, not only the highest priority
        on each line."""
        data = text.encode()
        context = SourceContext(name=name, who=attribution_from_path(name), default_year=2000)
        chunk = Chunk(data, 0, 1, 0)
        return [
            match
            for group in (self._abnormal, self._context)
            for match in self._matches_in(chunk, context, group, keep_all)
        ]

    def scan_texts(self, texts: list[str], *, keep_all: bool = False) -> list[list[Match]]:
        """`scan_text` of each text, with one scanner pass per block of texts (rule examples by
        the thousand): candidate lines are found in the texts of a block joined, then confirmed
        on each text alone, so each text's matches are exactly what `scan_text` gives. Blocks
        of TEXT_BLOCK bytes rather than one buffer: the `re` backend searches a pattern only
        where its keywords are, and in one buffer of every example they are everywhere."""
        encoded = [text.encode() for text in texts]
        found: list[list[Match]] = [[] for _ in texts]
        first = 0
        while first < len(encoded):
            last, size = first + 1, len(encoded[first])
            while last < len(encoded) and size + 1 + len(encoded[last]) <= TEXT_BLOCK:
                size += 1 + len(encoded[last])
                last += 1
            self._scan_block(encoded, first, last, found, keep_all)
            first = last
        return found

    def _scan_block(
        self,
        encoded: list[bytes],
        first: int,
        last: int,
        found: list[list[Match]],
        keep_all: bool,
    ) -> None:
        offsets: list[int] = []
        position = 0
        for data in encoded[first:last]:
            offsets.append(position)
            position += len(data) + 1
        joined = b"\n".join(encoded[first:last])
        who = attribution_from_path("<text>")
        for group in (self._abnormal, self._context):
            per_text: dict[int, dict[int, list[int]]] = {}
            for pattern_index, starts in group.scanner.candidate_lines(joined).items():
                for start in starts:
                    index = bisect_right(offsets, start) - 1
                    line_start = start - offsets[index]
                    per_text.setdefault(first + index, {}).setdefault(line_start, []).append(
                        pattern_index
                    )
            for index, by_line in sorted(per_text.items()):
                context = SourceContext(name="<text>", who=who, default_year=2000)
                chunk = Chunk(encoded[index], 0, 1, 0)
                found[index].extend(self._confirm(chunk, context, group, by_line, keep_all))

    def _matches_in(
        self,
        chunk: Chunk,
        context: SourceContext,
        group: _PatternGroup,
        keep_all: bool = False,
        accept: Callable[[str], bool] | None = None,
        *,
        defer: bool = False,
        drop: AbnormalLines | None = None,
    ) -> Iterator[Match | _Pending]:
        """Confirmed matches of `group` in the chunk; with `accept`, only on lines whose text
        it accepts, and with `drop`, without the signatures its judgement rejects on a line
        (both judged before the line's event is built); with `defer`, each match comes
        `_Pending`, for the caller to complete if it keeps it."""
        candidates = group.scanner.candidate_lines(chunk.data)
        by_line: dict[int, list[int]] = {}
        for pattern_index, starts in candidates.items():
            fresh = [start for start in starts if start >= chunk.scan_from]
            if group.thin and len(fresh) > 2 * CONTEXT_PER_WINDOW:
                # Context lines (step markers) can be on every other line of a healthy log;
                # the first and last of each chunk are all the timeline needs.
                fresh = fresh[:CONTEXT_PER_WINDOW] + fresh[-CONTEXT_PER_WINDOW:]
            for start in fresh:
                by_line.setdefault(start, []).append(pattern_index)
        return self._confirm(chunk, context, group, by_line, keep_all, accept, defer, drop)

    def _confirm(
        self,
        chunk: Chunk,
        context: SourceContext,
        group: _PatternGroup,
        by_line: dict[int, list[int]],
        keep_all: bool,
        accept: Callable[[str], bool] | None = None,
        defer: bool = False,
        drop: AbnormalLines | None = None,
    ) -> Iterator[Match | _Pending]:
        """Matches on the candidate lines (line start -> pattern indexes), confirmed by `re`."""
        data = chunk.data
        counted_to, line_number = 0, chunk.first_line
        starts = sorted(by_line)
        never = drop.never if drop is not None else None
        within = drop.continued_within if drop is not None else 0
        for position, start in enumerate(starts):
            begin, end = line_bounds(data, start)
            text = decode(data[begin:end])
            if accept is not None and not accept(text):
                continue
            hits = _confirmed(group, sorted(by_line[start]), text, data, begin, end, keep_all)
            if never is not None and hits and not _followed(data, end, starts, position, within):
                hits = [hit for hit in hits if not never(text, hit[0].signature)]
            if not hits:
                continue
            line_number += data.count(b"\n", counted_to, start)
            counted_to = start
            event, untimed = line_event(chunk, start, line_number, context, hits[0][1])
            for ref, _, captures in hits:
                match = Match(ref.signature, _about(event, captures), captures)
                pending = _Pending(match, untimed, not group.thin, chunk, start)
                yield pending if defer else pending.completed(context)


def _followed(data: bytes, end: int, starts: list[int], position: int, within: int) -> bool:
    """Whether another candidate line starts within `within` lines below the line ending at
    `end`."""
    if position + 1 >= len(starts) or within <= 0:
        return False
    return data.count(b"\n", end, starts[position + 1]) <= within


def _confirmed(
    group: _PatternGroup,
    pattern_indexes: Iterable[int],
    text: str,
    data: bytes,
    begin: int,
    end: int,
    keep_all: bool = False,
) -> list[tuple[PatternRef, int, dict[str, str]]]:
    hits: dict[str, tuple[PatternRef, int, dict[str, str]]] = {}
    for index in pattern_indexes:
        confirmer = group.confirmer(index)
        found = confirmer.regex.search(text)
        if found is None or confirmer.ref.signature.id in hits:
            continue
        captures = {k: v for k, v in found.groupdict().items() if v is not None}
        for regex, within, backwards in confirmer.nearby:
            captures.update(_nearby_captures(regex, within, backwards, data, begin, end))
        hits[confirmer.ref.signature.id] = (confirmer.ref, found.start(), captures)
    if not hits or keep_all:
        return list(hits.values())
    top = max(ref.signature.priority for ref, _, _ in hits.values())
    return [hit for hit in hits.values() if hit[0].signature.priority == top]


def without_claimed(matches: list[Match]) -> list[Match]:
    """The matches less those a context signature claims: on a line a known harmless message
    claims (`claims_line`), signatures of lower priority that would read it as a failure
    are dropped (NCCL's plugin probe quotes the loader's "cannot open shared object file")."""
    claimed: dict[tuple[str, int], int] = {}
    for match in matches:
        if match.signature.claims_line:
            key = (match.event.source, match.event.line)
            claimed[key] = max(claimed.get(key, match.signature.priority), match.signature.priority)
    if not claimed:
        return matches
    return [
        m
        for m in matches
        if m.role is Role.context
        or m.signature.priority >= claimed.get((m.event.source, m.event.line), -1)
    ]


def _first_time(head: bytes, context: SourceContext, lines: int = 50) -> float | None:
    for raw in head.split(b"\n", lines)[:lines]:
        stamp = stamp_of_line(split_prefixes(decode(raw)), context.default_year)
        if stamp.epoch is not None:
            return stamp.epoch
    return None


def _head_window(chunk: Chunk) -> Chunk:
    """The first CONTEXT_WINDOW bytes of an input's first chunk, cut at a line end."""
    if len(chunk.data) <= CONTEXT_WINDOW:
        return chunk
    cut = chunk.data.rfind(b"\n", 0, CONTEXT_WINDOW) + 1 or CONTEXT_WINDOW
    return Chunk(chunk.data[:cut], 0, chunk.first_line, chunk.base_offset)


def _tail_window(chunk: Chunk) -> Chunk:
    """The last CONTEXT_WINDOW bytes of a chunk, starting at a line start."""
    data = chunk.data
    if len(data) <= CONTEXT_WINDOW:
        return chunk
    start = data.rfind(b"\n", 0, len(data) - CONTEXT_WINDOW) + 1
    return Chunk(
        data[start:],
        max(0, chunk.scan_from - start),
        chunk.first_line + data.count(b"\n", 0, start),
        chunk.base_offset + start,
    )


def _context_windows(head: Chunk, last: Chunk) -> list[Chunk]:
    """Where context signatures are looked for: an input's start and its end, each once."""
    tail = _tail_window(last)
    head_end = head.base_offset + len(head.data)
    if tail.base_offset >= head_end:
        return [head, tail]
    if tail.base_offset <= head.base_offset:
        return [tail] if len(tail.data) >= len(head.data) else [head]
    overlap = head_end - tail.base_offset  # the windows meet: scan the tail past the head only
    return [head, Chunk(tail.data, min(len(tail.data), overlap), tail.first_line, tail.base_offset)]


def _int_or_none(text: str | None) -> int | None:
    return identifier(text)


def _about(event: Event, captures: dict[str, str]) -> Event:
    """The event attributed to whom its captures name, over what its prefixes said, and timed
    by a `time` capture when the line carries no timestamp of its own."""
    if "time" in captures and (event.time is None or event.time_inferred):
        stamp = parse_stamp(captures["time"], _YEAR_UNKNOWN)
        if stamp.epoch is not None and not stamp.year_inferred:
            event = replace(event, time=stamp.epoch, time_inferred=False)
    if not captures.keys() & {"rank", "local_rank", "host", "pid"}:
        return event
    stated = Attribution(
        rank=_int_or_none(captures.get("rank")),
        local_rank=_int_or_none(captures.get("local_rank")),
        host=captures.get("host"),
        pid=_int_or_none(captures.get("pid")),
    )
    return replace(event, who=stated.merged_over(event.who))


def _unreadable(item: Input, warning: str, kind: str = UNREADABLE) -> ScannedInput:
    return ScannedInput(item.name, item.relative, kind, item.size or 0, 0, [], {}, None, [warning])


def _dump_input(item: Input, kind: str, body: BinaryIO, who: Attribution) -> ScannedInput:
    """A Flight Recorder dump is kept whole (bounded) for hang triage, never line-scanned."""
    parts: list[bytes] = []
    size = 0
    warnings: list[str] = []
    while size <= MAX_DUMP_BYTES:
        try:
            block = body.read(8 * 1024 * 1024)
        except READ_ERRORS as error:
            warnings.append(f"{item.name}: dump read stopped early ({error})")
            break
        if not block:
            break
        parts.append(block)
        size += len(block)
    if size > MAX_DUMP_BYTES:
        warnings.append(f"{item.name}: skipped, a dump larger than {MAX_DUMP_BYTES} bytes")
        return ScannedInput(
            item.name, item.relative, kind, size, 0, [], {}, None, warnings, who=who
        )
    return ScannedInput(
        item.name, item.relative, kind, size, 0, [], {}, b"".join(parts), warnings, who=who
    )


@functools.cache
def _compiled(regex: str, flags: int) -> re.Pattern[str]:
    """A confirmer compiled once per process (a library compiled again reuses it)."""
    return re.compile(regex, flags)


def _flags(caseless: bool) -> int:
    return re.ASCII | (re.IGNORECASE if caseless else 0)


confirmer_regex = _compiled
"""A pattern as a confirmer compiles it, shared with the lint's own checks of each regex."""
confirmer_flags = _flags


def _nearby_captures(
    regex: re.Pattern[str], within: int, backwards: bool, data: bytes, begin: int, end: int
) -> dict[str, str]:
    """Captures of the first line within `within` lines of a match that `regex` finds."""
    for _ in range(within):
        if backwards:
            if begin == 0:
                break
            end = begin - 1
            begin = data.rfind(b"\n", 0, end) + 1
        else:
            if end + 1 >= len(data):
                break
            begin, end = line_bounds(data, end + 1)
        if found := regex.search(decode(data[begin:end])):
            return {k: v for k, v in found.groupdict().items() if v is not None}
    return {}


def _first_year(head: bytes) -> int | None:
    found = _YEAR.search(head)
    return identifier(found.group(1)) if found else None
