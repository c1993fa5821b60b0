"""The evidence every view reads: one scan of the inputs, assembled once.

Consumes input paths (or stdin), the compiled library and `EvidenceOptions`; produces `Evidence`:
the scanned inputs with their signature matches, the abnormal lines no signature explains (when
a caller asks for them) and each input's SHA-256, all from ONE read of each input; the matches
within the job's window, with ranks resolved and clocks corrected; the job's world size and the
ranks' hosts, inferred once from everything the inputs state (rank prefixes and file names, the
dumps' names and pg_config, a launcher line that states the world size), unless the caller
knows better; the Flight Recorder triage of the dumps among the inputs; and what `denpex run`
gathered on the hosts (`telemetry.jsonl`, `host.json`), read in the same scan.

`denpex diagnose`, `denpex hang`, `denpex run`, the HTTP API and the best effort are views of
the same `Evidence`: the same inputs give the same culprit whichever door they come in by.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import BinaryIO

from denpex.errors import InputError
from denpex.events import Match
from denpex.hang.dumps import DumpError, rank_from_name
from denpex.hang.hosts import Location
from denpex.hang.inputs import dump_files
from denpex.hang.models import HangReport, Scheduler
from denpex.hang.plain_pickle import PickleLimits
from denpex.hang.triage import DumpFile, HangOptions, triage_dumps
from denpex.ingest.kinds import UNREAD_KINDS
from denpex.ingest.sources import Collector, InputLimits, iter_inputs
from denpex.match.scan import AbnormalLines, Matcher, ScannedInput
from denpex.telemetry import HostTelemetry, host_telemetry
from denpex.timeline.identity import world_size_from_ranks
from denpex.timeline.order import OrderedTimeline, build_timeline
from denpex.timeline.window import HOST_LOG_KINDS, HOST_LOG_LEAD_S, job_start, within_job

ProgressCallback = Callable[[str, int], None]
"""Called after each input with its display name and the bytes read."""

WORLD_SIZE_CAPTURES = ("world_size",)
"""Captures through which a signature's line states the job's world size."""


@dataclass(frozen=True)
class EvidenceOptions:
    """What the caller knows better than the inputs (all optional)."""

    world_size: int | None = None
    rank_hosts: Mapping[int, Location] = field(default_factory=dict)
    capture_times: Mapping[str, float] = field(default_factory=dict)
    """When each Flight Recorder dump was taken (epoch seconds), by dump path or file name."""
    capture_from_mtime: bool = False
    scheduler: Scheduler | None = None
    abnormal: AbnormalLines | None = None
    """The generic lexicon and judgement for lines no signature explains (the best effort's)."""
    digests: bool = False
    """Whether to hash every input (the incident store keys incidents by their inputs)."""
    limits: InputLimits = field(default_factory=InputLimits)
    """Bounds on reading the inputs (unpacked bytes, a deadline)."""


@dataclass
class ScanResult:
    """Everything the one scan of all inputs produced, before any assembly."""

    inputs: list[ScannedInput] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def matches(self) -> list[Match]:
        return [m for scanned in self.inputs for m in scanned.matches]

    @property
    def dropped(self) -> dict[tuple[str, int | None], int]:
        totals: dict[tuple[str, int | None], int] = {}
        for scanned in self.inputs:
            for key, count in scanned.dropped.items():
                totals[key] = totals.get(key, 0) + count
        return totals


@dataclass(frozen=True)
class WorldSize:
    size: int | None
    stated_by: str
    """How the size is known, in words ('the world size given', 'rank 3's log', ...)."""


@dataclass(frozen=True)
class Evidence:
    """What every view of one set of inputs reads. Plain data, built once by `assemble`."""

    inputs: tuple[ScannedInput, ...]
    timeline: OrderedTimeline
    """The matches within the job's window, ranks resolved, clocks corrected, in time order."""
    world: WorldSize
    input_ranks: frozenset[int]
    """Ranks that the inputs' own paths state (a rank's log exists, whatever it matched)."""
    dumps: tuple[DumpFile, ...]
    hang: HangReport | None
    """Triage of the Flight Recorder dumps, when there are usable ones."""
    hang_problems: tuple[str, ...]
    """Why the dumps could not be triaged, when there are dumps and no report."""
    abnormal: tuple[Match, ...]
    """Lines no signature matched that the caller's judgement calls abnormal, in input order."""
    digests: Mapping[str, str]
    """Input display name -> SHA-256 of all its bytes (when asked for)."""
    dropped: Mapping[tuple[str, int | None], int]
    warnings: tuple[str, ...]
    rules_version: str
    host: HostTelemetry = field(default_factory=HostTelemetry)
    """What `denpex run` gathered on the hosts (GPU and memory samples, the tools' states)."""

    @property
    def matches(self) -> list[Match]:
        return self.timeline.matches


def scan_inputs(
    paths: list[str],
    matcher: Matcher,
    stdin: BinaryIO | None = None,
    progress: ProgressCallback | None = None,
    limits: InputLimits | None = None,
    *,
    abnormal: AbnormalLines | None = None,
    digests: bool = False,
) -> ScanResult:
    """The one read of every input. Raises InputError when there is nothing to read."""
    collector = Collector([], limits or InputLimits())
    result = ScanResult(warnings=collector.warnings)
    fallback_year: int | None = None
    for item in iter_inputs(paths, stdin, collector):
        scanned = matcher.scan_input(item, fallback_year, abnormal=abnormal, digest=digests)
        result.inputs.append(scanned)
        collector.warnings.extend(scanned.warnings)
        fallback_year = fallback_year or year_of(scanned)
        if progress is not None:
            progress(item.name, scanned.bytes)
    require_something_read(result.inputs, collector.warnings)
    return result


def require_something_read(inputs: Sequence[ScannedInput], warnings: Sequence[str]) -> None:
    """Raises InputError when no input held text or a dump: an answer of "no failure" would
    pass for having read a log."""
    if not any(scanned.kind not in UNREAD_KINDS for scanned in inputs):
        reasons = "; ".join(warnings) or "the paths hold no files"
        raise InputError(f"nothing to diagnose: {reasons}")


def year_of(scanned: ScannedInput) -> int | None:
    """The year of the input's first timestamp that states one: the year later inputs'
    year-less timestamps are read in, when their own opening lines print none."""
    for match in scanned.matches:
        if match.event.time is not None and not match.event.time_inferred:
            return time.gmtime(match.event.time).tm_year
    return None


def assemble(
    paths: list[str],
    matcher: Matcher,
    options: EvidenceOptions | None = None,
    *,
    stdin: BinaryIO | None = None,
    progress: ProgressCallback | None = None,
) -> Evidence:
    """The evidence of `paths`, from one read of each input."""
    options = options or EvidenceOptions()
    scan = scan_inputs(
        paths,
        matcher,
        stdin,
        progress,
        options.limits,
        abnormal=options.abnormal,
        digests=options.digests,
    )
    return assemble_scan(scan, matcher.library.label, options)


def assemble_scan(scan: ScanResult, rules_version: str, options: EvidenceOptions) -> Evidence:
    """The evidence of an existing scan (what `assemble` does after reading)."""
    windowed = within_job(
        scan.matches,
        {s.name for s in scan.inputs if s.kind in HOST_LOG_KINDS},
        job_start((s.kind, s.first_time) for s in scan.inputs),
    )
    warnings = list(scan.warnings)
    if windowed.set_aside:
        warnings.append(
            f"{windowed.set_aside} kernel or telemetry record(s) from more than "
            f"{HOST_LOG_LEAD_S:.0f} s before the job's first line were set aside as history"
        )
    timeline = build_timeline(windowed.matches)
    warnings.extend(timeline.notes)
    dumps = tuple(dump_files(scan.inputs, capture_from_mtime=options.capture_from_mtime))
    input_ranks = frozenset(s.who.rank for s in scan.inputs if s.who.rank is not None)
    world = infer_world_size(options.world_size, timeline.matches, input_ranks, dumps)
    if world.size is None and world.stated_by.startswith("nothing: "):
        warnings.append(world.stated_by.removeprefix("nothing: "))
    host = host_telemetry((s.name, s.who.host, s.telemetry) for s in scan.inputs if s.telemetry)
    warnings.extend(host.not_gathered())
    hang, problems = _triage(dumps, timeline, world, options, rules_version)
    warnings.extend(hang.warnings if hang is not None else problems)
    return Evidence(
        inputs=tuple(scan.inputs),
        timeline=timeline,
        world=world,
        input_ranks=input_ranks,
        dumps=dumps,
        hang=hang,
        hang_problems=tuple(problems),
        abnormal=tuple(m for s in scan.inputs for m in s.abnormal),
        digests={s.name: s.digest for s in scan.inputs if s.digest is not None},
        dropped=scan.dropped,
        warnings=tuple(warnings),
        rules_version=rules_version,
        host=host,
    )


def infer_world_size(
    given: int | None,
    matches: list[Match],
    input_ranks: frozenset[int],
    dumps: tuple[DumpFile, ...],
) -> WorldSize:
    """The job's world size: the caller's, else a line that states it, else one more than the
    highest rank anything names (a line's prefix, a log's or a dump's file name). The last is
    a lower bound: a rank that left no trace at all stays unseen."""
    if given is not None:
        return WorldSize(given, "the world size given")
    for match in matches:
        for name in WORLD_SIZE_CAPTURES:
            value = match.captures.get(name)
            if value is not None and value.isdigit() and int(value) > 0:
                return WorldSize(
                    int(value), f"the world size stated at {match.event.source}:{match.event.line}"
                )
    named: dict[int, str] = {}
    for rank in sorted(input_ranks):
        named.setdefault(rank, "an input's path")
    for dump in dumps:
        if (rank := rank_from_name(dump.name)) is not None:
            named.setdefault(rank, "a dump's name")
    for match in matches:
        if match.event.rank is not None:
            named.setdefault(match.event.rank, f"{match.event.source}:{match.event.line}")
    if not named:
        return WorldSize(None, "nothing in the inputs")
    top = max(named)
    if world_size_from_ranks(set(named)) is None:
        return WorldSize(
            None,
            f"nothing: rank {top} (in {named[top]}) is far past the other {len(named) - 1} "
            "rank(s) in evidence, so the world size is left unknown",
        )
    return WorldSize(top + 1, f"the highest rank the inputs name (rank {top}, in {named[top]})")


def _triage(
    dumps: tuple[DumpFile, ...],
    timeline: OrderedTimeline,
    world: WorldSize,
    options: EvidenceOptions,
    rules_version: str,
) -> tuple[HangReport | None, list[str]]:
    if not dumps:
        return None, []
    limits = options.limits
    hang_options = HangOptions(
        world_size=world.size,
        world_size_from=world.stated_by,
        rank_hosts=options.rank_hosts,
        capture_times=options.capture_times,
        limits=PickleLimits(
            max_bytes=limits.max_dump_bytes,
            max_depth=limits.max_dump_depth,
            max_containers=limits.max_dump_containers,
        ),
    )
    try:
        report = triage_dumps(
            dumps, timeline.matches, options.scheduler, hang_options, rules_version=rules_version
        )
    except DumpError as error:
        return None, [str(error)]
    return report, []
