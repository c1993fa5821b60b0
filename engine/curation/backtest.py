"""What a draft signature would do, before it is promoted.

Consumes a draft `Signature`, the library it would join (the packaged library and the current
overlay), the incident store, the labelled cases and the healthy logs; produces a `Backtest`:
every stored incident and every labelled case the draft matches, with the rules' diagnosis of
each before and after the draft joins the library, and every line of the healthy logs it
matches. The draft alone is scanned over everything first (one pattern: fast); only what it
matches is diagnosed twice. Seed incidents are the labelled cases' masked lines, so the cases
stand for them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from denpex.curation.compiled import compiled
from denpex.curation.corpora import healthy_paths, labelled_cases, lines_of
from denpex.curation.rediagnose import rediagnose
from denpex.curation.settings import CurationSettings
from denpex.evidence import EvidenceOptions, assemble
from denpex.hybrid.harvest import abnormal_lines
from denpex.match.scan import AbnormalLines, Matcher
from denpex.models import Diagnosis
from denpex.pipeline import DiagnoseOptions, diagnose_evidence
from denpex.signatures.library import Library, library_of
from denpex.signatures.signature import Signature
from denpex.store.store import IncidentStore

SEED = "seed"
SHOWN = 3


@dataclass(frozen=True)
class Outcome:
    status: str
    failure_class: str | None
    confidence: float | None
    signature_id: str | None = None

    @classmethod
    def of(cls, diagnosis: Diagnosis) -> Outcome:
        top = diagnosis.root_causes[0] if diagnosis.root_causes else None
        return cls(
            diagnosis.status.value,
            top.failure_class if top else None,
            round(top.confidence, 2) if top else None,
            top.signature_id if top else None,
        )

    def __str__(self) -> str:
        confidence = f" {self.confidence:.2f}" if self.confidence is not None else ""
        return f"{self.status} {self.failure_class or '-'}{confidence}"


@dataclass(frozen=True)
class Hit:
    kind: str
    """incident, eval or healthy"""
    where: str
    line: str
    label: str | None = None
    """The confirmed class (an incident's curator, a labelled case's label); None if unknown."""
    curation_state: str | None = None
    before: Outcome | None = None
    after: Outcome | None = None

    @property
    def changes(self) -> bool:
        return self.before is not None and self.after is not None and self.before != self.after

    @property
    def harms(self) -> bool:
        """The draft changes a confirmed diagnosis to a class other than the confirmed one."""
        return (
            self.changes
            and self.label is not None
            and self.after is not None
            and self.after.failure_class != self.label
        )


@dataclass
class Backtest:
    signature_id: str
    failure_class: str | None
    incidents: list[Hit] = field(default_factory=list)
    evals: list[Hit] = field(default_factory=list)
    healthy: list[Hit] = field(default_factory=list)

    def refusals(self) -> list[str]:
        """Why the draft must not be promoted; empty when the back-test is clean."""
        reasons = []
        if self.healthy:
            shown = "; ".join(f"{h.where}: {h.line.strip()[:90]}" for h in self.healthy[:SHOWN])
            reasons.append(f"fires on {len(self.healthy)} healthy log line(s): {shown}")
        for hit in [*self.incidents, *self.evals]:
            if hit.harms:
                what = "incident" if hit.kind == "incident" else "labelled case"
                reasons.append(
                    f"changes the confirmed diagnosis of {what} {hit.where[:40]} "
                    f"(confirmed {hit.label}): {hit.before} -> {hit.after}"
                )
        return reasons

    def as_dict(self) -> dict[str, object]:
        return {
            "signature_id": self.signature_id,
            "failure_class": self.failure_class,
            "incidents": [_hit(h) for h in self.incidents],
            "evals": [_hit(h) for h in self.evals],
            "healthy": [_hit(h) for h in self.healthy],
            "refusals": self.refusals(),
        }


def _hit(hit: Hit) -> dict[str, object]:
    document = asdict(hit)
    document["changes"] = hit.changes
    document["harms"] = hit.harms
    return document


class _Lazy:
    """A matcher compiled on first use: nothing is compiled when the draft matches nothing."""

    def __init__(self, build: Callable[[], Matcher]) -> None:
        self._build = build
        self._matcher: Matcher | None = None

    def __call__(self) -> Matcher:
        if self._matcher is None:
            self._matcher = self._build()
        return self._matcher


def backtest(
    draft: Signature, library: Library, store: IncidentStore, settings: CurationSettings
) -> Backtest:
    alone = Matcher(library_of([draft]), "re")
    before = _Lazy(lambda: compiled(library, settings.backend, settings.cache_dir))
    after = _Lazy(lambda: compiled(library, settings.backend, settings.cache_dir, [draft]))
    abnormal = abnormal_lines(settings.backend, settings.cache_dir)
    report = Backtest(draft.id, draft.failure_class)

    for incident in store.in_state([]):
        if incident.rules_version == SEED:
            continue
        found = [
            line.text
            for line, hits in zip(
                incident.excerpt, alone.scan_texts([x.text for x in incident.excerpt]), strict=True
            )
            if hits
        ]
        if not found:
            continue
        old = rediagnose(incident, before(), abnormal, settings.threshold)
        new = rediagnose(incident, after(), abnormal, settings.threshold)
        report.incidents.append(
            Hit(
                "incident",
                incident.id,
                found[0],
                incident.confirmed_class,
                incident.curation_state,
                Outcome.of(old),
                Outcome.of(new),
            )
        )

    cases = labelled_cases(settings.eval_dirs)
    for case in cases:
        if case.failure_class is None:
            continue
        lines = lines_of([Path(p) for p in case.inputs])
        matched = [
            line
            for line, hits in zip(lines, alone.scan_texts([x.text for x in lines]), strict=True)
            if hits
        ]
        if not matched:
            continue
        report.evals.append(
            Hit(
                "eval",
                case.name,
                matched[0].text,
                case.failure_class,
                None,
                Outcome.of(_diagnose(list(case.inputs), before(), abnormal, settings)),
                Outcome.of(_diagnose(list(case.inputs), after(), abnormal, settings)),
            )
        )

    healthy = lines_of(healthy_paths(settings.healthy, cases))
    for line, hits in zip(healthy, alone.scan_texts([x.text for x in healthy]), strict=True):
        if hits:
            report.healthy.append(Hit("healthy", line.where, line.text))
    return report


def _diagnose(
    inputs: list[str], matcher: Matcher, abnormal: AbnormalLines, settings: CurationSettings
) -> Diagnosis:
    evidence = assemble(inputs, matcher, EvidenceOptions(abnormal=abnormal))
    return diagnose_evidence(
        evidence, DiagnoseOptions(confidence_threshold=settings.threshold), time.perf_counter()
    )
