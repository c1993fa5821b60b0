"""All silent-failure checks over one job's progress records.

Consumes the progress records of every input (`ScannedInput.progress`); produces the
`SilentFinding`s, one per failure class at most (the earliest onset, with the others' evidence),
ordered by confidence. The per-layer probe names the layer where a numerical event began.
"""

from __future__ import annotations

from collections.abc import Iterable

from denpex.models import SilentFinding
from denpex.progress.formats import PROBE_KEY
from denpex.progress.series import ProgressRecord, build_series
from denpex.silent.common import evidence_of
from denpex.silent.numerics import find_numerical_events
from denpex.silent.probe_trace import ProbeAnomaly, first_anomaly
from denpex.silent.replicas import from_probe, from_progress
from denpex.silent.stragglers import find_stragglers
from denpex.taxonomy import Category, failure_class

MAX_EVIDENCE = 8
PROBE_LEAD_STEPS = 50
"""A probe anomaly at most this many steps before a numerical onset (or at it) names that
event's first layer."""


def _merged(findings: list[SilentFinding]) -> list[SilentFinding]:
    by_class: dict[str, list[SilentFinding]] = {}
    for finding in findings:
        by_class.setdefault(finding.failure_class, []).append(finding)
    merged = []
    for group in by_class.values():
        group.sort(key=lambda f: (f.step if f.step is not None else 1 << 62, f.layer is None))
        first = group[0]
        if len(group) > 1:
            evidence = [e for f in group for e in f.evidence][:MAX_EVIDENCE]
            layer = first.layer or next((f.layer for f in group if f.layer), None)
            first = first.model_copy(
                update={
                    "evidence": evidence,
                    "layer": layer,
                    "confidence": max(f.confidence for f in group),
                    "detector": "+".join(dict.fromkeys(f.detector for f in group)),
                }
            )
        merged.append(first)
    return merged


def _with_layer(finding: SilentFinding, anomaly: ProbeAnomaly | None) -> SilentFinding:
    if anomaly is None or finding.layer is not None or finding.step is None:
        return finding
    numerical = failure_class(finding.failure_class).category is Category.ml_numerical
    if finding.suspicion or not numerical:
        return finding
    if not finding.step - PROBE_LEAD_STEPS <= anomaly.step <= finding.step:
        return finding
    kind = "became non-finite" if anomaly.non_finite else f"jumped {anomaly.ratio:.3g}x"
    return finding.model_copy(
        update={
            "layer": anomaly.layer,
            "title": f"{finding.title}; the weight update of layer {anomaly.layer} {kind} "
            f"first, at step {anomaly.step}",
            "evidence": [evidence_of(r) for r in anomaly.records[:2]] + finding.evidence,
        }
    )


def _sampling_caveat(finding: SilentFinding, stride: int) -> SilentFinding:
    said = (
        f"Progress lines were sampled (past each input's first lines, up to 1 in {stride} "
        "kept, with every NaN/Inf line and the last lines): a step between samples is unseen."
    )
    caveat = f"{finding.caveat} {said}".strip()
    return finding.model_copy(update={"caveat": caveat})


def find_silent_failures(
    records: Iterable[ProgressRecord], sampled_stride: int = 1
) -> list[SilentFinding]:
    """`sampled_stride`: the largest stride any input's progress was sampled at (1: none)."""
    records = list(records)
    probe = [r for r in records if r.point.format_id == PROBE_KEY]
    series = build_series(records)
    findings = [
        *find_stragglers(series),
        *find_numerical_events(series),
        *from_progress(series),
        *from_probe(probe),
    ]
    anomaly = first_anomaly(probe) if probe else None
    if (
        anomaly is not None
        and anomaly.non_finite
        and not any(f.failure_class == "nan_or_inf" for f in findings)
    ):
        findings.append(
            SilentFinding(
                failure_class="nan_or_inf",
                title=f"the weight update of layer {anomaly.layer} became non-finite at step "
                f"{anomaly.step}",
                detector="probe.weight_delta",
                step=anomaly.step,
                ranks=sorted({r.rank for r in anomaly.records if r.rank is not None}),
                layer=anomaly.layer,
                confidence=0.85,
                evidence=[evidence_of(r) for r in anomaly.records[:4]],
            )
        )
    findings = [_with_layer(f, anomaly) for f in _merged(findings)]
    if sampled_stride > 1:
        findings = [_sampling_caveat(f, sampled_stride) for f in findings]
    return sorted(findings, key=lambda f: -f.confidence)
