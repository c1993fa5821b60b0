"""The diagnosis pipeline: ingest → match → timeline → reason → gate.

Consumes input paths (or stdin) and explicit options; produces a `Diagnosis`. Settings are
passed in, never read from the environment here. Heavy libraries are not imported on this path:
a case the rules settle never loads torch, sentence-transformers, faiss or litellm. The hybrid
path (incident store, retrieval, LLM) takes part only when the caller passes one in.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Protocol

from denpex import __version__
from denpex.errors import InputError
from denpex.events import Match
from denpex.gate import AbnormalLines, gate
from denpex.hang.dumps import DumpError, rank_from_name
from denpex.hang.inputs import dump_files
from denpex.hang.models import HangReport
from denpex.hang.triage import HangOptions, triage_dumps
from denpex.hybrid.harvest import rewindable, unexplained_lines
from denpex.ingest.sources import Collector, InputLimits, iter_inputs
from denpex.match.library import Library, load_library
from denpex.match.scan import Matcher, ScannedInput
from denpex.models import Diagnosis, InputSummary
from denpex.reason.from_dumps import hang_hypotheses
from denpex.reason.hypotheses import form_hypotheses
from denpex.timeline.identity import world_size_from_ranks
from denpex.timeline.order import OrderedTimeline, build_timeline
from denpex.timeline.window import HOST_LOG_KINDS, HOST_LOG_LEAD_S, job_start, within_job

ProgressCallback = Callable[[str, int], None]
"""Called after each input with its display name and the bytes read."""


class HybridCase(Protocol):
    """The hybrid path for one diagnosis (implemented by `denpex.hybrid.path`)."""

    stdin: BinaryIO | None
    """Standard input made rewindable, since the hybrid path reads the inputs twice."""

    def best_effort(self, uncertain: Diagnosis, timeline: OrderedTimeline) -> Diagnosis: ...

    def record(self, diagnosis: Diagnosis, timeline: OrderedTimeline) -> Diagnosis: ...

    def abnormal(self, timeline: OrderedTimeline) -> Sequence[Match]: ...


class Hybrid(Protocol):
    def case(self, paths: list[str], stdin: BinaryIO | None) -> HybridCase: ...


@dataclass(frozen=True)
class DiagnoseOptions:
    rules_dir: Path | None = None
    backend: str = "auto"
    confidence_threshold: float = 0.6
    cache_dir: Path | None = None
    """Where parsed signatures and compiled scanner databases are kept between runs."""
    limits: InputLimits = field(default_factory=InputLimits)
    """Bounds on reading the inputs (unpacked bytes, a deadline)."""


@dataclass
class ScanResult:
    """Everything the scan of all inputs produced, before any reasoning."""

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


def scan_inputs(
    paths: list[str],
    matcher: Matcher,
    stdin: BinaryIO | None = None,
    progress: ProgressCallback | None = None,
    limits: InputLimits | None = None,
) -> ScanResult:
    collector = Collector([], limits or InputLimits())
    result = ScanResult(warnings=collector.warnings)
    fallback_year: int | None = None
    for item in iter_inputs(paths, stdin, collector):
        scanned = matcher.scan_input(item, fallback_year)
        result.inputs.append(scanned)
        collector.warnings.extend(scanned.warnings)
        fallback_year = fallback_year or _year_of(scanned)
        if progress is not None:
            progress(item.name, scanned.bytes)
    if not result.inputs:
        reasons = "; ".join(collector.warnings) or "the paths hold no files"
        raise InputError(f"nothing to diagnose: {reasons}")
    return result


def _year_of(scanned: ScannedInput) -> int | None:
    for match in scanned.matches:
        if match.event.time is not None and not match.event.time_inferred:
            return time.gmtime(match.event.time).tm_year
    return None


def diagnose(
    paths: list[str],
    options: DiagnoseOptions | None = None,
    *,
    library: Library | None = None,
    matcher: Matcher | None = None,
    stdin: BinaryIO | None = None,
    progress: ProgressCallback | None = None,
    hybrid: Hybrid | None = None,
) -> Diagnosis:
    started = time.perf_counter()
    options = options or DiagnoseOptions()
    if matcher is None:
        library = library or load_library(options.rules_dir, cache_dir=options.cache_dir)
        matcher = Matcher(library, options.backend, options.cache_dir)
    case = hybrid.case(paths, stdin) if hybrid is not None else None
    if case is not None:
        stdin = case.stdin
    elif stdin is not None:
        stdin = rewindable(stdin)  # the gate may ask for the lines no signature matched
    scan = scan_inputs(paths, matcher, stdin, progress, options.limits)
    abnormal = case.abnormal if case else unexplained_lines(paths, stdin, options.backend)
    return diagnose_scan(scan, matcher.library, options, started, case, abnormal)


def _hang_triage(
    scan: ScanResult, timeline: OrderedTimeline, library: Library, warnings: list[str]
) -> HangReport | None:
    """Triage of the Flight Recorder dumps among the inputs, if there are any."""
    dumps = dump_files(scan.inputs)
    if not dumps:
        return None
    known = {m.event.rank for m in timeline.matches if m.event.rank is not None}
    known |= {r for d in dumps if (r := rank_from_name(d.name)) is not None}
    world_size = world_size_from_ranks(known)
    if known and world_size is None:
        warnings.append(
            f"rank {max(known)} (from a file name or a line) is far past the other "
            f"{len(known) - 1} rank(s) in evidence; the world size is left unknown"
        )
    options = HangOptions(world_size=world_size)
    try:
        report = triage_dumps(dumps, timeline.matches, options=options, rules_version=library.label)
    except DumpError as error:
        warnings.append(str(error))
        return None
    warnings.extend(report.warnings)
    return report


def diagnose_scan(
    scan: ScanResult,
    library: Library,
    options: DiagnoseOptions,
    started: float,
    case: HybridCase | None = None,
    abnormal: AbnormalLines | None = None,
) -> Diagnosis:
    """`abnormal` tells a run no signature explains from a healthy one (see `gate`); without it
    the absence of any signature match is taken for a healthy run."""
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
    hang = _hang_triage(scan, timeline, library, warnings)
    from_dumps = hang_hypotheses(hang, timeline.matches) if hang is not None else []
    hypotheses = form_hypotheses(timeline.matches, from_dumps)
    diagnosis = gate(
        hypotheses=hypotheses,
        timeline=timeline,
        input_ranks={s.who.rank for s in scan.inputs if s.who.rank is not None},
        dropped=scan.dropped,
        inputs=[
            InputSummary(source=s.name, kind=s.kind, bytes=s.bytes, lines=s.lines)
            for s in scan.inputs
        ],
        warnings=warnings,
        threshold=options.confidence_threshold,
        denpex_version=__version__,
        rules_version=library.label,
        started=started,
        best_effort=case.best_effort if case else None,
        hang=hang,
        abnormal=abnormal,
    )
    return case.record(diagnosis, timeline) if case else diagnosis
