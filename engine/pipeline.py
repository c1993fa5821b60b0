"""The diagnosis: the `Diagnosis` view of the assembled `Evidence` (reason → gate).

Consumes input paths (or stdin) and explicit options; produces a `Diagnosis`. The inputs are
read once, by `denpex.evidence.assemble`, into the evidence every view reads (`denpex hang`
reads the same). Settings are passed in, never read from the environment here. Heavy libraries
are not imported on this path: a case the rules settle never loads torch,
sentence-transformers, faiss or litellm. The hybrid path (incident store, retrieval, LLM) takes
part only when the caller passes one in; what it needs from the inputs (abnormal lines, digests)
is gathered in the same read.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Protocol

from denpex import __version__
from denpex.evidence import (
    Evidence,
    EvidenceOptions,
    ProgressCallback,
    ScanResult,
    assemble,
    assemble_scan,
    scan_inputs,
)
from denpex.gate import gate
from denpex.hybrid.harvest import abnormal_lines
from denpex.ingest.sources import InputLimits
from denpex.match.compiled import compiled_matcher
from denpex.match.scan import AbnormalLines, Matcher
from denpex.models import Diagnosis, InputSummary
from denpex.reason.from_dumps import hang_hypotheses
from denpex.reason.hypotheses import form_hypotheses
from denpex.reason.setup_stall import stalled_in_setup
from denpex.signatures.library import Library
from denpex.silent.causes import with_silent_findings
from denpex.silent.detect import find_silent_failures
from denpex.silent.host import host_findings
from denpex.timeline.order import OrderedTimeline

__all__ = [
    "DiagnoseOptions",
    "Hybrid",
    "HybridCase",
    "ProgressCallback",
    "RecordedAs",
    "ScanResult",
    "diagnose",
    "diagnose_evidence",
    "diagnose_scan",
    "scan_inputs",
]


class HybridCase(Protocol):
    """The hybrid path for one diagnosis (implemented by `denpex.hybrid.path`)."""

    def best_effort(self, uncertain: Diagnosis, timeline: OrderedTimeline) -> Diagnosis: ...

    def record(self, diagnosis: Diagnosis, timeline: OrderedTimeline) -> Diagnosis: ...


class Hybrid(Protocol):
    def abnormal_lines(self, backend: str, cache_dir: Path | None) -> AbnormalLines: ...

    def case(self, evidence: Evidence) -> HybridCase: ...


class RecordedAs:
    """A hybrid path that records one diagnosis under an id chosen beforehand (the API's id,
    a job's id: a job run twice then records once) and for a tenant."""

    def __init__(self, path: Hybrid, incident_id: str, tenant: str | None) -> None:
        self._path = path
        self._incident_id = incident_id
        self._tenant = tenant

    def abnormal_lines(self, backend: str, cache_dir: Path | None) -> AbnormalLines:
        return self._path.abnormal_lines(backend, cache_dir)

    def case(self, evidence: Evidence) -> HybridCase:
        case = self._path.case(evidence)
        # HybridCase (denpex.hybrid.path) records under these; another Hybrid may ignore them.
        if hasattr(case, "incident_id"):
            case.incident_id = self._incident_id
        if hasattr(case, "tenant"):
            case.tenant = self._tenant
        return case


@dataclass(frozen=True)
class DiagnoseOptions:
    rules_dir: Path | None = None
    backend: str = "auto"
    confidence_threshold: float = 0.6
    cache_dir: Path | None = None
    """Where parsed signatures and compiled scanner databases are kept between runs."""
    limits: InputLimits = field(default_factory=InputLimits)
    """Bounds on reading the inputs (unpacked bytes, a deadline)."""
    experimental: bool = False
    """Whether signatures of status experimental take part."""
    overlay_dir: Path | None = None
    """The deployment's overlay of curated signatures, loaded on top of the packaged library."""


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
    if matcher is None and library is not None:
        matcher = Matcher(library, options.backend, options.cache_dir)
    elif matcher is None:
        matcher = compiled_matcher(
            options.rules_dir,
            experimental=options.experimental,
            backend=options.backend,
            cache_dir=options.cache_dir,
            overlay_dir=options.overlay_dir,
        )
    evidence = assemble(
        paths,
        matcher,
        EvidenceOptions(
            limits=options.limits,
            # Always: a run is called healthy only when no abnormal line is left unexplained.
            abnormal=(
                hybrid.abnormal_lines(options.backend, options.cache_dir)
                if hybrid
                else abnormal_lines(options.backend, options.cache_dir)
            ),
            digests=hybrid is not None,
        ),
        stdin=stdin,
        progress=progress,
    )
    return diagnose_evidence(evidence, options, started, hybrid)


def diagnose_scan(
    scan: ScanResult,
    library: Library,
    options: DiagnoseOptions,
    started: float,
    hybrid: Hybrid | None = None,
) -> Diagnosis:
    """The diagnosis of an existing scan (the evaluation scans once and diagnoses it)."""
    evidence = assemble_scan(scan, library.label, EvidenceOptions(limits=options.limits))
    return diagnose_evidence(evidence, options, started, hybrid)


def diagnose_evidence(
    evidence: Evidence,
    options: DiagnoseOptions,
    started: float,
    hybrid: Hybrid | None = None,
) -> Diagnosis:
    """The `Diagnosis` view of the evidence."""
    case = hybrid.case(evidence) if hybrid is not None else None
    timeline = evidence.timeline
    from_dumps = hang_hypotheses(evidence.hang, timeline.matches) if evidence.hang else []
    hypotheses = form_hypotheses(timeline.matches, from_dumps, evidence.input_ranks)
    diagnosis = gate(
        hypotheses=hypotheses,
        timeline=timeline,
        input_ranks=set(evidence.input_ranks),
        dropped=evidence.dropped,
        inputs=[
            InputSummary(source=s.name, kind=s.kind, bytes=s.bytes, lines=s.lines)
            for s in evidence.inputs
        ],
        warnings=list(evidence.warnings),
        threshold=options.confidence_threshold,
        denpex_version=__version__,
        rules_version=evidence.rules_version,
        started=started,
        best_effort=case.best_effort if case else None,
        hang=evidence.hang,
        abnormal=lambda _timeline: list(evidence.abnormal),
    )
    # Silent failures (issue 14): read from the progress lines the scan collected; they add to
    # the diagnosis and become root causes only when the logs show no failure.
    silent = find_silent_failures(
        (r for s in evidence.inputs for r in s.progress),
        max((s.progress_stride for s in evidence.inputs), default=1),
    )
    stall = stalled_in_setup(timeline.matches, evidence.inputs, evidence.world.size)
    if stall is not None:
        silent = [*silent, stall]
    # What `denpex run` sampled on the hosts reads as the silent findings do.
    from_host = host_findings(evidence.host)
    diagnosis = with_silent_findings(diagnosis, [*silent, *from_host], options.confidence_threshold)
    return case.record(diagnosis, timeline) if case else diagnosis
