"""Diagnoses a stored incident again, with another library.

Consumes an incident and a matcher; produces a rules-only `Diagnosis`. The incident's own
inputs are read when they are still where they were and unchanged (their SHA-256 matches the
stored digest); otherwise its stored abnormal lines are diagnosed, written back under their
sources' names (which carry the ranks) in their original order. The store keeps no whole logs,
so the second is an approximation that the diagnosis's warnings say.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
import time
from pathlib import Path

from denpex.evidence import EvidenceOptions, assemble
from denpex.match.scan import AbnormalLines, Matcher
from denpex.models import Diagnosis
from denpex.pipeline import DiagnoseOptions, diagnose_evidence
from denpex.store.records import Incident

FROM_EXCERPT = "re-diagnosed from the incident's stored abnormal lines (its inputs are gone)"


def _unchanged(incident: Incident) -> list[str] | None:
    paths = []
    for item in incident.inputs:
        path = Path(item.source)
        if item.sha256 is None or not path.is_file():
            return None
        if hashlib.sha256(path.read_bytes()).hexdigest() != item.sha256:
            return None
        paths.append(str(path))
    return paths or None


def _safe(source: str) -> str:
    parts = [re.sub(r"[^\w.-]", "_", p) for p in Path(source).parts[-3:] if p not in ("/", "..")]
    return "/".join(p for p in parts if p.strip("._")) or "input.log"


def rediagnose(
    incident: Incident, matcher: Matcher, abnormal: AbnormalLines, threshold: float = 0.6
) -> Diagnosis:
    """The rules' diagnosis of the incident with `matcher`'s library (`abnormal`: the lexicon's
    scan, `denpex.hybrid.harvest.abnormal_lines`)."""
    options = DiagnoseOptions(confidence_threshold=threshold)
    inputs = _unchanged(incident)
    if inputs is not None:
        evidence = assemble(inputs, matcher, EvidenceOptions(abnormal=abnormal))
        return diagnose_evidence(evidence, options, time.perf_counter())
    with tempfile.TemporaryDirectory(prefix="denpex-rediagnose-") as folder:
        by_source: dict[str, list[tuple[int, str]]] = {}
        for line in incident.excerpt:
            by_source.setdefault(line.source, []).append((line.line, line.text))
        written = []
        for source, lines in by_source.items():
            path = Path(folder) / _safe(source)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("\n".join(text for _, text in sorted(lines)) + "\n")
            written.append(str(path))
        evidence = assemble(written, matcher, EvidenceOptions(abnormal=abnormal))
        diagnosis = diagnose_evidence(evidence, options, time.perf_counter())
    return diagnosis.model_copy(update={"warnings": [*diagnosis.warnings, FROM_EXCERPT]})
