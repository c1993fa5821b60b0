"""Progress lines found in raw input bytes, and the per-rank series they make.

Consumes chunks of one input (with the input's `SourceContext`); produces `ProgressRecord`s: a
parsed `Point`, where it was printed (source, line), who printed it (rank, local rank, host from
the line's prefixes, the file's path or the line itself) and when. `build_series` groups the
records of all inputs into one `Series` per emitter. A scanner proposes candidate lines from the
formats' keywords in one pass over the bytes (Hyperscan or `re`); only those lines are decoded.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

from denpex.events import Attribution
from denpex.ingest.lines import SourceContext, clip, decode, line_bounds, split, stamp_of_line
from denpex.ingest.reader import Chunk
from denpex.progress.formats import PROBE_KEY, Format, Point, formats, parse_message, parse_probe
from denpex.signatures.backends import PatternSpec, Scanner, make_scanner

MAX_RECORDS_PER_INPUT = 200_000
"""Beyond this many progress lines in one input, the rest are counted, not kept."""


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


class ProgressScanner:
    """Finds and parses the progress lines of a chunk."""

    def __init__(self, backend: str = "auto", cache_dir: Path | None = None) -> None:
        self._formats: tuple[Format, ...] = formats()
        keywords = sorted({k for f in self._formats for k in f.spec.keywords} | {PROBE_KEY})
        self._scanner: Scanner = make_scanner(
            [PatternSpec("|".join(re.escape(k) for k in keywords), False, tuple(keywords))],
            backend,
            cache_dir,
        )

    def records_in(self, chunk: Chunk, context: SourceContext, room: int) -> list[ProgressRecord]:
        """The progress records among the lines of `chunk` not seen in an earlier chunk."""
        data = chunk.data
        starts = sorted(
            {s for found in self._scanner.candidate_lines(data).values() for s in found}
        )
        records: list[ProgressRecord] = []
        counted_to, line_number = 0, chunk.first_line
        for start in starts:
            if start < chunk.scan_from or len(records) >= room:
                continue
            begin, end = line_bounds(data, start)
            line_number += data.count(b"\n", counted_to, start)
            counted_to = start
            # A progress bar rewrites itself with carriage returns: each piece is one update.
            for piece in data[begin:end].split(b"\r"):
                record = self._record(piece, line_number, context)
                if record is not None:
                    records.append(record)
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


def _emitter(record: ProgressRecord) -> Emitter:
    rank = record.rank
    return Emitter(rank, record.who.host, record.who.local_rank if rank is None else None)


def build_series(records: Iterable[ProgressRecord]) -> list[Series]:
    """One series per emitter, its records in the order they were printed."""
    grouped: dict[Emitter, Series] = {}
    seen: set[tuple[Emitter, str, int | None, tuple[tuple[str, float], ...]]] = set()
    for record in records:
        if record.point.format_id == PROBE_KEY:
            continue  # per-layer probe lines are read by the probe check, not as progress
        emitter = _emitter(record)
        if emitter.rank is not None:
            # Lines stating the rank join that rank's series, whatever host the file names.
            emitter = next((e for e in grouped if e.rank == emitter.rank), emitter)
        # The same line twice (a launcher's tee and the rank's own file) is one point.
        point = record.point
        key = (emitter, point.format_id, point.step, tuple(sorted(point.values.items())))
        if point.step is not None and key in seen:
            continue
        seen.add(key)
        grouped.setdefault(emitter, Series(emitter)).records.append(record)
    for series in grouped.values():
        series._steps = _steps_of(series.records)
    return sorted(grouped.values(), key=_order)


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
