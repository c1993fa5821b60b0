"""A backfill: what is already diagnosed, diagnosed again with the library as it stands now.

Consumes the incident store, or a root folder of past jobs (`denpex run` bundles, each with the
`diagnosis.json` it was given), and the curation settings (the current library: packaged plus
overlay); produces a `Backfill`: every incident's or job's outcome before and after, and which
changed. Each incident or job is a part any process that reaches the store and the files can
re-diagnose (`backfill_part`), so `denpex.distributed` runs the same parts in this process, on a
local process pool or as a Celery job. A backfill changes nothing in the store: it says what
the new library would answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from denpex.curation.backtest import SEED, Outcome
from denpex.curation.compiled import compiled, current_library
from denpex.curation.errors import CurationError
from denpex.curation.rediagnose import rediagnose
from denpex.curation.settings import CurationSettings
from denpex.errors import InputError
from denpex.evidence import EvidenceOptions, assemble
from denpex.hybrid.harvest import abnormal_lines
from denpex.models import Diagnosis
from denpex.pipeline import DiagnoseOptions, diagnose_evidence
from denpex.store.store import IncidentStore

Part = dict[str, Any]
"""A stored incident (`{"incident": id}`) or a past job's folder (`{"job": path}`)."""

DIAGNOSIS_FILE = "diagnosis.json"
"""What `denpex run` wrote into a failed job's bundle; the job's "before"."""


@dataclass(frozen=True)
class Change:
    kind: str
    """incident or job"""
    where: str
    before: Outcome | None
    """None for a job folder that kept no diagnosis."""
    after: Outcome | None
    """None when the part could not be diagnosed again (`problem` says why)."""
    problem: str | None = None

    @property
    def changed(self) -> bool:
        return self.after is not None and self.before != self.after

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "where": self.where,
            "before": vars(self.before) if self.before else None,
            "after": vars(self.after) if self.after else None,
            "problem": self.problem,
            "changed": self.changed,
        }

    @classmethod
    def of(cls, value: Mapping[str, Any]) -> Change:
        return cls(
            value["kind"],
            value["where"],
            Outcome(**value["before"]) if value["before"] else None,
            Outcome(**value["after"]) if value["after"] else None,
            value["problem"],
        )


@dataclass
class Backfill:
    library: str
    changes: list[Change] = field(default_factory=list)

    @property
    def changed(self) -> list[Change]:
        return [c for c in self.changes if c.changed]

    def as_dict(self) -> dict[str, Any]:
        return {
            "library": self.library,
            "parts": len(self.changes),
            "changed": len(self.changed),
            "changes": [c.as_dict() for c in self.changes],
        }


def backfill_parts(
    store: IncidentStore | None, roots: Iterable[Path] = (), *, limit: int = 100_000
) -> list[Part]:
    """Every stored incident but the seed (oldest first), then every job folder under `roots`
    (a folder holding a `diagnosis.json`, in name order)."""
    parts: list[Part] = []
    if store is not None:
        parts += [{"incident": i.id} for i in store.in_state([], limit) if i.rules_version != SEED]
    for root in roots:
        if not root.is_dir():
            raise InputError(f"{root}: not a folder of past jobs")
        parts += [{"job": str(found.parent)} for found in sorted(root.rglob(DIAGNOSIS_FILE))]
    return parts


def backfill_part(part: Part, store: IncidentStore | None, settings: CurationSettings) -> Change:
    """One incident or job, diagnosed again by the rules with the current library."""
    matcher = compiled(current_library(settings), settings.backend, settings.cache_dir)
    abnormal = abnormal_lines(settings.backend, settings.cache_dir)
    if "incident" in part:
        if store is None:
            raise CurationError("an incident's backfill needs the incident store")
        incident = store.get(part["incident"])
        after = rediagnose(incident, matcher, abnormal, settings.threshold)
        return Change("incident", incident.id, Outcome.of(incident.diagnosis), Outcome.of(after))
    folder = Path(part["job"])
    before = None
    kept = folder / DIAGNOSIS_FILE
    if kept.is_file():
        before = Outcome.of(Diagnosis.model_validate_json(kept.read_text(encoding="utf-8")))
    # The job's own files, as `denpex run` diagnosed them: everything but its diagnosis.
    inputs = sorted(str(p) for p in folder.iterdir() if p.name != DIAGNOSIS_FILE)
    try:
        evidence = assemble(inputs, matcher, EvidenceOptions(abnormal=abnormal))
    except InputError as error:
        return Change("job", str(folder), before, None, str(error))
    diagnosis = diagnose_evidence(
        evidence, DiagnoseOptions(confidence_threshold=settings.threshold), 0.0
    )
    return Change("job", str(folder), before, Outcome.of(diagnosis))


def backfill_of(settings: CurationSettings, changes: Iterable[Change]) -> Backfill:
    """The report of every part's change, in the parts' order (the reduce)."""
    return Backfill(current_library(settings).label, list(changes))


def backfill(
    store: IncidentStore | None, settings: CurationSettings, roots: Iterable[Path] = ()
) -> Backfill:
    """The backfill in this process, part after part."""
    parts = backfill_parts(store, roots)
    return backfill_of(settings, [backfill_part(part, store, settings) for part in parts])
