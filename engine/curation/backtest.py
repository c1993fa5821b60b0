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
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from denpex.curation.compiled import compiled, current_library
from denpex.curation.corpora import healthy_paths, labelled_cases, lines_of
from denpex.curation.errors import CurationError
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

    @classmethod
    def of(cls, document: Mapping[str, Any]) -> Backtest:
        """The back-test `as_dict` wrote (what a job's reduce sends back)."""
        return cls(
            document["signature_id"],
            document["failure_class"],
            [hit_of(h) for h in document["incidents"]],
            [hit_of(h) for h in document["evals"]],
            [hit_of(h) for h in document["healthy"]],
        )

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


Part = dict[str, Any]
"""One piece of a back-test, as plain data: a stored incident (`{"incident": id}`), a labelled
case (`{"case": name, "inputs": [...], "label": class}`) or a healthy log (`{"healthy": path}`)."""


def backtest_parts(store: IncidentStore, settings: CurationSettings) -> list[Part]:
    """What a back-test reads, in the report's order: every stored incident but the seed, every
    labelled failure case, every healthy log. Any process that reaches the store and the files
    can back-test any part (`backtest_part`)."""
    parts: list[Part] = [
        {"incident": incident.id}
        for incident in store.in_state([])
        if incident.rules_version != SEED
    ]
    cases = labelled_cases(settings.eval_dirs)
    parts += [
        {"case": case.name, "inputs": list(case.inputs), "label": case.failure_class}
        for case in cases
        if case.failure_class is not None
    ]
    parts += [{"healthy": str(path)} for path in healthy_paths(settings.healthy, cases)]
    return parts


def backtest_part(
    part: Part, draft: Signature, store: IncidentStore, settings: CurationSettings
) -> list[Hit]:
    """What the draft does to one part: the draft alone is scanned over it first (one pattern:
    fast); only what it matches is diagnosed with the library before and after the draft
    joins it (`current_library`: the packaged library and the overlay as they stand)."""
    alone = Matcher(library_of([draft]), "re")
    if "healthy" in part:
        lines = lines_of([Path(part["healthy"])])
        hits = alone.scan_texts([x.text for x in lines])
        return [
            Hit("healthy", line.where, line.text)
            for line, hit in zip(lines, hits, strict=True)
            if hit
        ]
    library = current_library(settings)
    abnormal = abnormal_lines(settings.backend, settings.cache_dir)

    def before() -> Matcher:
        return compiled(library, settings.backend, settings.cache_dir)

    def after() -> Matcher:
        return compiled(library, settings.backend, settings.cache_dir, [draft])

    if "incident" in part:
        incident = store.get(part["incident"])
        texts = [x.text for x in incident.excerpt]
        found = [text for text, hit in zip(texts, alone.scan_texts(texts), strict=True) if hit]
        if not found:
            return []
        old = rediagnose(incident, before(), abnormal, settings.threshold)
        new = rediagnose(incident, after(), abnormal, settings.threshold)
        return [
            Hit(
                "incident",
                incident.id,
                found[0],
                incident.confirmed_class,
                incident.curation_state,
                Outcome.of(old),
                Outcome.of(new),
            )
        ]
    inputs = list(part["inputs"])
    lines = lines_of([Path(p) for p in inputs])
    hits = alone.scan_texts([x.text for x in lines])
    matched = [line for line, hit in zip(lines, hits, strict=True) if hit]
    if not matched:
        return []
    return [
        Hit(
            "eval",
            part["case"],
            matched[0].text,
            part["label"],
            None,
            Outcome.of(_diagnose(inputs, before(), abnormal, settings)),
            Outcome.of(_diagnose(inputs, after(), abnormal, settings)),
        )
    ]


def backtest_of(draft: Signature, hits: Iterable[Hit]) -> Backtest:
    """The report of every part's hits, given in the parts' order (the reduce)."""
    report = Backtest(draft.id, draft.failure_class)
    for hit in hits:
        {"incident": report.incidents, "eval": report.evals, "healthy": report.healthy}[
            hit.kind
        ].append(hit)
    return report


def backtest(
    draft: Signature, library: Library, store: IncidentStore, settings: CurationSettings
) -> Backtest:
    """The back-test in this process, part after part (`denpex.distributed` runs the same
    parts on a local process pool or as a Celery job). `library` is the library the draft
    would join; it must be `current_library(settings)`, which every part reads again."""
    if library.label != current_library(settings).label:
        raise CurationError("a back-test runs against the current library (packaged + overlay)")
    parts = backtest_parts(store, settings)
    return backtest_of(
        draft, [hit for part in parts for hit in backtest_part(part, draft, store, settings)]
    )


def hit_of(value: Mapping[str, Any]) -> Hit:
    """A hit from its plain data (`asdict`, or the back-test's `as_dict`)."""
    outcomes = {
        key: Outcome(**value[key]) if value.get(key) is not None else None
        for key in ("before", "after")
    }
    return Hit(
        value["kind"],
        value["where"],
        value["line"],
        value.get("label"),
        value.get("curation_state"),
        **outcomes,
    )


def _diagnose(
    inputs: list[str], matcher: Matcher, abnormal: AbnormalLines, settings: CurationSettings
) -> Diagnosis:
    evidence = assemble(inputs, matcher, EvidenceOptions(abnormal=abnormal))
    return diagnose_evidence(
        evidence, DiagnoseOptions(confidence_threshold=settings.threshold), time.perf_counter()
    )
