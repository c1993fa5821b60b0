"""Hang triage: Flight Recorder dumps of every rank in, a ranked `HangReport` out.

Consumes dumps as (name, bytes) pairs, the signature matches already found among the other
inputs, an optional scheduler and `HangOptions`; produces a `HangReport`. This is the function
`denpex diagnose` calls with the dumps and the matches its scan already has:

    from denpex.hang.inputs import dump_files
    report = triage_dumps(dump_files(scan.inputs), scan.matches, rules_version=library.label)

(`dump_files` wraps each `ScannedInput.dump` with the host its path states; plain
`(name, bytes)` pairs work too.)

A dump that cannot be used becomes a warning naming the file; `DumpError` is raised only when
no dump at all is usable. Nothing here reads the environment, the clock (except to time
itself) or the file system.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import PurePosixPath

from denpex import __version__
from denpex.events import Match
from denpex.hang.correlate import Window, correlate
from denpex.hang.culprits import GroupVerdict, judge_groups
from denpex.hang.dumps import DumpError, FrDump, rank_from_name, read_dump, utc_at
from denpex.hang.evidence import ranks_text
from denpex.hang.hosts import Location, rank_hosts
from denpex.hang.isolation import infer_scheduler, plan_isolation
from denpex.hang.models import (
    Candidate,
    DumpSummary,
    GroupProgress,
    HangProvenance,
    HangReport,
    HangStatus,
    RankProgress,
    Scheduler,
)
from denpex.hang.plain_pickle import PickleLimits
from denpex.hang.progress import NS_PER_S, Capture, Group, build_groups, expected_ranks

STALE_TOLERANCE_S = 1.0
"""A dump captured this long before the hang's onset is still taken as current (clock jitter)."""


@dataclass(frozen=True)
class DumpFile:
    """A dump with what its caller knows about it beyond its name."""

    name: str
    data: bytes
    host: str | None = None
    """The host that wrote it, when the caller knows better than the name's directories."""
    host_from_name: bool = True
    """Whether a host missing above may be read from the name's directories. False when the
    caller already read the part of the path below what the user gave: the folders above it
    (a checkout called `fresh2`, a home directory) name no host."""
    captured_at: float | None = None
    """When it was taken (epoch seconds)."""


@dataclass(frozen=True)
class HangOptions:
    world_size: int | None = None
    """The job's world size, when known; otherwise inferred from the dumps (and said so)."""
    world_size_from: str | None = None
    """How `world_size` was inferred from the other inputs (None: the user gave it). An
    inferred size is a lower bound: a default group's pg_config in the dumps wins over it."""
    rank_hosts: Mapping[int, Location] = field(default_factory=dict)
    capture_times: Mapping[str, float] = field(default_factory=dict)
    """When each dump was taken (epoch seconds), by dump name or file name."""
    record_window_s: float = 3600.0
    """How far from the hang's onset a hardware record still counts."""
    isolate_threshold: float = 0.6
    limits: PickleLimits = field(default_factory=PickleLimits)


def triage_dumps(
    dumps: Sequence[tuple[str, bytes] | DumpFile],
    records: Sequence[Match] = (),
    scheduler: Scheduler | str | None = None,
    options: HangOptions | None = None,
    *,
    rules_version: str | None = None,
) -> HangReport:
    started = time.perf_counter()
    options = options or HangOptions()
    files = [d if isinstance(d, DumpFile) else DumpFile(*d) for d in dumps]
    capture_times = {
        **options.capture_times,
        **{f.name: f.captured_at for f in files if f.captured_at is not None},
    }
    warnings: list[str] = []
    readable, unreadable = _read_all(files, options.limits, warnings)
    if not readable:
        reasons = "; ".join(warnings) or "no dumps given"
        raise DumpError(f"no usable Flight Recorder dump: {reasons}")
    chosen, summaries = _one_per_rank(readable, capture_times)
    captures = {
        rank: Capture(dump, _capture_time(dump.source, capture_times))
        for rank, dump in chosen.items()
    }
    expected, expected_from, incomplete = expected_ranks(
        list(captures.values()), options.world_size, unreadable, options.world_size_from
    )
    groups, notes = build_groups(captures, expected)
    incomplete += notes
    silent = {r: "no dump" for r in expected if r not in captures}
    silent.update({r: why for r, why in unreadable.items() if r not in captures})
    verdicts, stopped = judge_groups(groups, silent, captures)
    onset_ns = _onset(verdicts)
    stale = _stale(captures, onset_ns)
    if stale:
        silent.update(stale)
        verdicts, stopped = judge_groups(groups, silent, captures)
    candidates = [c for v in verdicts for c in v.candidates] + stopped
    hosts = rank_hosts(
        options.rank_hosts,
        {r: (d.host, d.source) for r, d in chosen.items() if d.host},
        records,
    )
    incomplete += list(hosts.conflicts)
    window = Window(onset_ns / NS_PER_S if onset_ns else None, options.record_window_s)
    candidates = _ranked(correlate(_deduplicated(candidates), records, hosts, window))
    named = Scheduler(scheduler) if scheduler else infer_scheduler(records)
    plan, withheld = plan_isolation(
        candidates, scheduler=named, silent=silent, threshold=options.isolate_threshold
    )
    incomplete += _capture_notes(captures)
    incomplete += _host_notes(candidates, hosts.locations)
    return HangReport(
        status=HangStatus.hang_found if candidates else HangStatus.no_hang_evidence,
        summary=_summary(candidates, captures, silent),
        candidates=candidates,
        isolation_plan=plan,
        withheld_reason=withheld,
        expected_ranks=list(expected),
        expected_ranks_from=expected_from,
        missing_ranks=sorted(silent),
        incomplete=incomplete,
        process_groups=[_group_progress(v.group, v.stuck_seq) for v in verdicts],
        dumps=summaries,
        warnings=warnings,
        provenance=HangProvenance(
            denpex_version=__version__,
            rules_version=rules_version,
            elapsed_ms=int((time.perf_counter() - started) * 1000),
        ),
    )


# --- reading ------------------------------------------------------------------------------------


def _read_all(
    files: Sequence[DumpFile], limits: PickleLimits, warnings: list[str]
) -> tuple[list[FrDump], dict[int, str]]:
    """The readable dumps, and for ranks whose dump is not, why (its name still shows the rank
    existed)."""
    readable = []
    unreadable: dict[int, str] = {}
    for file in files:
        try:
            dump = read_dump(file.name, file.data, limits)
        except DumpError as error:
            warnings.append(str(error))
            rank = rank_from_name(file.name)
            if rank is not None:
                unreadable[rank] = f"dump unreadable ({str(error).removeprefix(file.name + ': ')})"
            continue
        if file.host is not None or not file.host_from_name:
            dump = replace(dump, host=file.host)
        if dump.rank is None:
            warnings.append(
                f"{file.name}: cannot tell which rank wrote it (torch names dumps <prefix><rank>); "
                "left out"
            )
            continue
        readable.append(dump)
    return readable, unreadable


def _one_per_rank(
    dumps: list[FrDump], capture_times: Mapping[str, float]
) -> tuple[dict[int, FrDump], list[DumpSummary]]:
    """The newest dump of each rank (by capture time, else by its newest entry)."""
    by_rank: dict[int, list[FrDump]] = {}
    for dump in dumps:
        assert dump.rank is not None
        by_rank.setdefault(dump.rank, []).append(dump)
    chosen = {}
    for rank, candidates in by_rank.items():
        chosen[rank] = max(
            candidates,
            key=lambda d: (
                _capture_time(d.source, capture_times) or 0.0,
                d.newest_ns or 0,
                d.format == "pickle",  # the same moment: the pickle also has stack frames
            ),
        )
    summaries = [
        DumpSummary(
            source=d.source,
            rank=d.rank,
            host=d.host,
            format=d.format,
            version=d.version,
            entries=len(d.entries),
            captured_at=_utc(_capture_time(d.source, capture_times)),
            used=chosen.get(d.rank) is d if d.rank is not None else False,
            notes=list(d.notes),
        )
        for d in dumps
    ]
    return chosen, summaries


def _capture_time(source: str, capture_times: Mapping[str, float]) -> float | None:
    if source in capture_times:
        return capture_times[source]
    return capture_times.get(PurePosixPath(source).name)


# --- time ---------------------------------------------------------------------------------------


def _onset(verdicts: Sequence[GroupVerdict]) -> int | None:
    """When the hang began: the earliest creation of a stuck collective, else of the last
    collectives the ranks entered."""
    stuck = [v.onset_ns for v in verdicts if v.stuck_seq is not None and v.onset_ns]
    if stuck:
        return min(stuck)
    return max((v.onset_ns for v in verdicts if v.onset_ns), default=None)


def _stale(captures: Mapping[int, Capture], onset_ns: int | None) -> dict[int, str]:
    if onset_ns is None:
        return {}
    onset_s = onset_ns / NS_PER_S
    stale = {}
    for rank, capture in captures.items():
        if capture.captured_at is not None and capture.captured_at < onset_s - STALE_TOLERANCE_S:
            early = onset_s - capture.captured_at
            stale[rank] = f"dump taken {early:.0f} s before the hang began, so stale"
    return stale


def _capture_notes(captures: Mapping[int, Capture]) -> list[str]:
    unknown = sorted(r for r, c in captures.items() if c.captured_at is None)
    if not unknown:
        return []
    gloo = any(not captures[r].dump.tracks_state for r in unknown)
    note = (
        f"capture times unknown for rank(s) {ranks_text(unknown)}: a dump taken before the hang "
        "cannot be recognised as stale"
    )
    if gloo:
        note += (
            ", and a Gloo dump taken after a collective timed out shows that collective as "
            "completed (Gloo retires failed work too)"
        )
    return [note]


def _host_notes(candidates: Sequence[Candidate], locations: Mapping[int, Location]) -> list[str]:
    unmapped = sorted({r for c in candidates for r in c.ranks if r not in locations})
    if not unmapped:
        return []
    return [
        f"no evidence states the host of rank(s) {ranks_text(unmapped)}; hardware records cannot "
        "be tied to them"
    ]


def _utc(seconds: float | None) -> datetime | None:
    return utc_at(seconds)


# --- candidates ---------------------------------------------------------------------------------


def _deduplicated(candidates: list[Candidate]) -> list[Candidate]:
    """One candidate per (kind, ranks): the same rank missing from several groups' collectives
    is one explanation, kept where it is most confident and, at equal confidence, where the
    hang began first; the other readings add their evidence to it."""
    by_key: dict[tuple[str, tuple[int, ...]], list[Candidate]] = {}
    for candidate in candidates:
        by_key.setdefault((candidate.kind.value, tuple(candidate.ranks)), []).append(candidate)
    kept = []
    for readings in by_key.values():
        readings.sort(key=lambda c: (-c.confidence, c.since or _LATEST))
        best, others = readings[0], readings[1:]
        extra = [e for other in others for e in other.evidence[1:]]
        kept.append(best.model_copy(update={"evidence": [*best.evidence, *extra][:6]}))
    return kept


_LATEST = datetime.max.replace(tzinfo=UTC)


_KIND_ORDER = {"mismatched": 0, "never_entered": 1, "stopped_reporting": 2, "stalled": 3}


def _ranked(candidates: list[Candidate]) -> list[Candidate]:
    return sorted(
        candidates,
        key=lambda c: (-c.confidence, c.since or _LATEST, _KIND_ORDER[c.kind.value], c.ranks),
    )


def _summary(
    candidates: Sequence[Candidate], captures: Mapping[int, Capture], silent: Mapping[int, str]
) -> str:
    if candidates:
        best = candidates[0]
        return f"{best.summary} (confidence {best.confidence:.2f})"
    return (
        f"no hang evidence: the {len(captures)} dump(s) show every rank finished every collective "
        "it entered, with matching arguments"
        + ("" if not silent else f"; rank(s) {ranks_text(silent)} left no usable dump")
    )


# --- progress -----------------------------------------------------------------------------------


def _group_progress(group: Group, stuck_seq: int | None) -> GroupProgress:
    ranks = []
    for rank in group.members:
        progress = group.present.get(rank)
        if progress is None:
            ranks.append(RankProgress(rank=rank))
            continue
        pending = progress.pending
        ranks.append(
            RankProgress(
                rank=rank,
                source=progress.capture.dump.source,
                last_enqueued=progress.last_enqueued,
                last_started=progress.last_started,
                last_completed=progress.last_completed,
                waiting_in=f"seq {pending.seq} {pending.op}" if pending else None,
            )
        )
    return GroupProgress(
        name=group.name,
        desc=group.desc,
        members=list(group.members),
        members_from=group.members_from,
        stuck_seq=stuck_seq,
        ranks=ranks,
    )
