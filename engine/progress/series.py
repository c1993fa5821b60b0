"""Progress lines found in raw input bytes, and the per-rank series they make.

Consumes chunks of one input (with the input's `SourceContext`); produces `ProgressRecord`s: a
parsed `Point`, where it was printed (source, line), who printed it (rank, local rank, host from
the line's prefixes, the file's path or the line itself) and when. `build_series` groups the
records of all inputs into one `Series` per emitter. A scanner proposes candidate lines from the
formats' keywords in one pass over the bytes (Hyperscan or `re`); only those lines are decoded.

A long run prints a progress line per step, millions of them; parsing each in Python cost far
more than reading the bytes, and keeping each made memory grow with the input. So an input's
progress is read with bounded work (`ProgressReader`): its first HEAD_RECORDS lines and its last
TAIL_RECORDS, every line that prints a NaN or Inf value, and between them a uniform sample of at
most SAMPLED_RECORDS lines whose stride doubles as the input grows. Ranks that print the same
lines keep the same steps, so values that must agree across replicas stay comparable. Probe
lines (`denpex.probe`) are per layer and step, read whole up to MAX_PROBE_RECORDS.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

from denpex.events import Attribution
from denpex.ingest.lines import SourceContext, clip, decode, line_bounds, split, stamp_of_line
from denpex.ingest.reader import Chunk
from denpex.progress.formats import PROBE_KEY, Format, Point, formats, parse_message, parse_probe
from denpex.signatures.backends import PatternSpec, Scanner, line_start, make_scanner

HEAD_RECORDS = 128
SAMPLED_RECORDS = 384
TAIL_RECORDS = 128
MAX_NON_FINITE = 256
MAX_PROBE_RECORDS = 50_000
"""Beyond these, an input's progress lines of each kind are counted, not kept."""

# A loss, norm or scale printed as NaN or Inf (`loss: nan`, `'grad_norm': inf`, `loss nan`,
# `loss=tensor(nan`): such a line is always read, whatever the sample. A bare "nan" word is not
# enough: Megatron prints "number of nan iterations: 0" on every line.
_NON_FINITE = r"(?:loss|norm|scale)['\"]?[ \t]*[:=]?[ \t]*['\"]?(?:tensor\()?[-+]?(?:nan|inf)"


@dataclass(frozen=True, slots=True)
class ProgressRecord:
    source: str
    line: int
    who: Attribution
    time: float | None
    text: str
    point: Point

    @property
    def rank(self) -> int | None:
        return self.point.rank if self.point.rank is not None else self.who.rank


@dataclass(frozen=True, slots=True)
class Emitter:
    """Who printed a series: the rank when known, else the host and local rank."""

    rank: int | None
    host: str | None
    local_rank: int | None

    def label(self) -> str:
        if self.rank is not None:
            return f"rank {self.rank}" + (f" on {self.host}" if self.host else "")
        if self.local_rank is not None:
            return f"local rank {self.local_rank}" + (f" on {self.host}" if self.host else "")
        return self.host or "the job"


@dataclass(frozen=True, slots=True)
class Sample:
    step: int
    step_inferred: bool
    value: float
    record: ProgressRecord


@dataclass
class Series:
    emitter: Emitter
    records: list[ProgressRecord] = field(default_factory=list)
    _steps: list[tuple[int, bool]] = field(default_factory=list)

    def samples(self, name: str) -> list[Sample]:
        """Every value of `name` on this emitter, in the order it was printed."""
        return [
            Sample(step, inferred, value, record)
            for record, (step, inferred) in zip(self.records, self._steps, strict=True)
            if (value := record.point.get(name)) is not None
        ]

    def step_times(self) -> list[Sample]:
        """Seconds per step: as printed, else from the time between consecutive lines."""
        for name in ("compute_time", "step_time"):
            printed = [s for s in self.samples(name) if math.isfinite(s.value)]
            if len(printed) >= 2:
                return printed
        timed = [
            (step, record)
            for record, (step, inferred) in zip(self.records, self._steps, strict=True)
            if record.time is not None and not inferred and record.point.step is not None
        ]
        derived = []
        for (step_a, a), (step_b, b) in pairwise(timed):
            if step_b > step_a and a.time is not None and b.time is not None:
                derived.append(Sample(step_b, False, (b.time - a.time) / (step_b - step_a), b))
        return derived


@dataclass(frozen=True, slots=True)
class _Candidates:
    ends: list[int]
    """Line ends, in order, of the candidate lines at or after the chunk's `scan_from`: only
    the lines a reader keeps are looked up (`start`)."""
    non_finite: set[int]
    """Starts of the candidate lines that also hold a non-finite value."""
    probe: set[int]
    """Starts of the probe's lines."""

    def start(self, data: bytes, position: int) -> int:
        """The start of the candidate line at `position` in `ends`."""
        return line_start(data, self.ends[position])


class ProgressScanner:
    """Finds and parses the progress lines of a chunk."""

    def __init__(self, backend: str = "auto", cache_dir: Path | None = None) -> None:
        self._formats: tuple[Format, ...] = formats()
        keywords = sorted({k for f in self._formats for k in f.spec.keywords})
        # Each pattern runs to the end of the line: one report per line, however many keywords
        # it holds (a step line has three or four), and the report's end offset is the line's.
        self._scanner: Scanner = make_scanner(
            [
                PatternSpec(
                    "(?:" + "|".join(re.escape(k) for k in keywords) + ")[^\n]*$",
                    False,
                    tuple(keywords),
                ),
                PatternSpec(re.escape(PROBE_KEY) + "[^\n]*$", False, (PROBE_KEY,)),
                PatternSpec(_NON_FINITE + "[^\n]*$", True, ("nan", "inf")),
            ],
            backend,
            cache_dir,
        )

    def candidates(self, chunk: Chunk) -> _Candidates:
        data = chunk.data
        found = self._scanner.line_ends(data)
        progress, probe, non_finite = (found.get(i, []) for i in range(3))
        # A line start at or after `scan_from` ends at or after it (`scan_from` is a line start).
        ends = sorted({*progress, *probe}) if probe else progress
        ends = ends[bisect_left(ends, chunk.scan_from) :]
        in_progress = set(progress) if non_finite else set()
        return _Candidates(
            ends,
            {line_start(data, e) for e in non_finite if e in in_progress},
            {line_start(data, e) for e in probe},
        )

    def records_in(self, chunk: Chunk, context: SourceContext, room: int) -> list[ProgressRecord]:
        """Every progress record among the lines of `chunk` not seen in an earlier chunk, up
        to `room` (tests and small inputs; a whole input is read by `ProgressReader`)."""
        found = self.candidates(chunk)
        starts = [found.start(chunk.data, p) for p in range(len(found.ends))]
        return [r for _, r in self.parse(chunk, context, starts)][:room]

    def parse(
        self, chunk: Chunk, context: SourceContext, starts: list[int]
    ) -> list[tuple[int, ProgressRecord]]:
        """(line start, record) of the progress lines at `starts` (sorted) of `chunk`."""
        data = chunk.data
        records: list[tuple[int, ProgressRecord]] = []
        counted_to, line_number = 0, chunk.first_line
        for start in starts:
            begin, end = line_bounds(data, start)
            line_number += data.count(b"\n", counted_to, start)
            counted_to = start
            # A progress bar rewrites itself with carriage returns: each piece is one update.
            for piece in data[begin:end].split(b"\r"):
                record = self._record(piece, line_number, context)
                if record is not None:
                    records.append((start, record))
        return records

    def _record(self, raw: bytes, line: int, context: SourceContext) -> ProgressRecord | None:
        if not raw.strip():
            return None
        prefixed = split(raw, context)
        message = prefixed.message
        point = parse_probe(message) if PROBE_KEY in message else None
        point = point or parse_message(message, self._formats)
        if point is None:
            return None
        stamp = stamp_of_line(prefixed, context.default_year)
        return ProgressRecord(
            source=context.name,
            line=line,
            who=prefixed.who.merged_over(context.who),
            time=stamp.epoch,
            text=clip(decode(raw)),
            point=point,
        )


_Keyed = tuple[tuple[int, int], ProgressRecord]
"""((candidate line index in the input, piece of that line), record)"""


class ProgressReader:
    """One input's progress lines, read chunk by chunk with bounded work and memory (see the
    module's docstring): what the silent-failure checks get of a long run."""

    def __init__(self, scanner: ProgressScanner, context: SourceContext) -> None:
        self._scanner = scanner
        self._context = context
        self.seen = 0
        """Candidate progress lines met so far."""
        self.stride = 1
        """1 when every progress line so far was kept; else 1 in `stride` past the head."""
        self._head: list[_Keyed] = []
        self._sampled: list[_Keyed] = []
        self._non_finite: list[_Keyed] = []
        self._probe: list[_Keyed] = []
        self._tail: deque[_Keyed] = deque(maxlen=TAIL_RECORDS)

    def read(self, chunk: Chunk) -> None:
        found = self._scanner.candidates(chunk)
        count = len(found.ends)
        tail_from = count - TAIL_RECORDS
        # Lines past the head at multiples of the stride, at most SAMPLED_RECORDS of them: the
        # stride this chunk ends at is known before any is parsed, so none is parsed in vain.
        last = self.seen + count - 1
        while last // self.stride - (HEAD_RECORDS - 1) // self.stride > SAMPLED_RECORDS:
            self.stride *= 2
        # The positions (in this chunk's candidates) of the lines to parse, found by
        # arithmetic: a long run's millions of step lines are counted, never visited one by one.
        positions = {
            *range(min(count, max(0, HEAD_RECORDS - self.seen))),
            *range(-self.seen % self.stride, count, self.stride),
            *range(max(0, tail_from), count),
        }
        for lines, room in (
            (found.probe, len(self._probe) < MAX_PROBE_RECORDS),
            (found.non_finite, len(self._non_finite) < MAX_NON_FINITE),
        ):
            if room and lines:
                positions.update(self._positions(chunk.data, found.ends, lines))
        wanted: list[int] = []
        index_of: dict[int, int] = {}
        for position in sorted(positions):
            start = found.start(chunk.data, position)
            wanted.append(start)
            index_of[start] = self.seen + position
        pieces: dict[int, int] = {}
        for start, record in self._scanner.parse(chunk, self._context, wanted):
            index = index_of[start]
            piece = pieces[index] = pieces.get(index, -1) + 1
            keyed = ((index, piece), record)
            if record.point.format_id == PROBE_KEY:
                if len(self._probe) < MAX_PROBE_RECORDS:
                    self._probe.append(keyed)
                continue
            if index < HEAD_RECORDS:
                self._head.append(keyed)
            elif start in found.non_finite and len(self._non_finite) < MAX_NON_FINITE:
                self._non_finite.append(keyed)
            elif index % self.stride == 0:
                self._sampled.append(keyed)
            if index - self.seen >= tail_from:
                self._tail.append(keyed)
        self.seen += count
        self._sampled = [k for k in self._sampled if k[0][0] % self.stride == 0]

    @staticmethod
    def _positions(data: bytes, ends: list[int], starts: set[int]) -> list[int]:
        """The positions in `ends` of the candidate lines starting at `starts`."""
        positions = []
        for start in starts:
            position = bisect_left(ends, start)
            if position < len(ends) and line_start(data, ends[position]) == start:
                positions.append(position)
        return positions

    def records(self) -> list[ProgressRecord]:
        """What was kept, in the order it was printed."""
        kept = dict([*self._head, *self._sampled, *self._non_finite, *self._probe, *self._tail])
        return [kept[key] for key in sorted(kept)]


def _emitter(record: ProgressRecord) -> Emitter:
    rank = record.rank
    return Emitter(rank, record.who.host, record.who.local_rank if rank is None else None)


def build_series(records: Iterable[ProgressRecord]) -> list[Series]:
    """One series per emitter, its records in the order they were printed."""
    grouped: dict[Emitter, Series] = {}
    by_rank: dict[int, Emitter] = {}
    """the first emitter of each rank: a key of `grouped` once its record is kept (a record
    skipped below is a repeat, whose emitter is already there)"""
    seen: set[tuple[Emitter, str, int | None, tuple[tuple[str, float], ...]]] = set()
    for record in records:
        if record.point.format_id == PROBE_KEY:
            continue  # per-layer probe lines are read by the probe check, not as progress
        emitter = _emitter(record)
        if emitter.rank is not None:
            # Lines stating the rank join that rank's series, whatever host the file names.
            emitter = by_rank.setdefault(emitter.rank, emitter)
        # The same line twice (a launcher's tee and the rank's own file) is one point.
        point = record.point
        key = (emitter, point.format_id, point.step, tuple(sorted(point.values.items())))
        if point.step is not None and key in seen:
            continue
        seen.add(key)
        kept = grouped.setdefault(emitter, Series(emitter)).records
        if kept and _refreshes(kept[-1], record):
            kept[-1] = record
        else:
            kept.append(record)
    for series in grouped.values():
        series._steps = _steps_of(series.records)
    return sorted(grouped.values(), key=_order)


def _refreshes(before: ProgressRecord, after: ProgressRecord) -> bool:
    """Whether `after` is a redraw of `before`'s point: a progress bar redraws its step as its
    postfix changes (Lightning's shows the last step's loss at the new count, then the new
    loss), and only the last drawing of a step holds that step's values. Two lines of one step
    that state different values (a loss line, then a grad-norm line) are both kept."""
    a, b = before.point, after.point
    return (
        a.step is not None
        and a.step == b.step
        and a.format_id == b.format_id
        and b.values.keys() >= a.values.keys()
    )


def _steps_of(records: list[ProgressRecord]) -> list[tuple[int, bool]]:
    """Each record's step, and whether it was inferred. A line without a step (an fp16
    overflow line, printed while its step runs) takes the next step its emitter prints, else
    the last; a format that never prints steps is numbered in order."""
    following: list[int | None] = []
    upcoming: int | None = None
    for record in reversed(records):
        upcoming = record.point.step if record.point.step is not None else upcoming
        following.append(upcoming)
    following.reverse()
    steps: list[tuple[int, bool]] = []
    last: int | None = None
    ordinal: dict[str, int] = {}
    for record, after in zip(records, following, strict=True):
        if record.point.step is not None:
            last = record.point.step
            steps.append((last, False))
        elif after is not None:
            steps.append((after, True))
        elif last is not None:
            steps.append((last, True))
        else:
            ordinal[record.point.format_id] = ordinal.get(record.point.format_id, 0) + 1
            steps.append((ordinal[record.point.format_id], True))
    return steps


def _order(series: Series) -> tuple[int, str, int]:
    e = series.emitter
    return (
        e.rank if e.rank is not None else 1 << 30,
        e.host or "",
        e.local_rank if e.local_rank is not None else -1,
    )
