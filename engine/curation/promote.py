"""Promotes a draft signature into the deployment's overlay, or refuses and says why.

Consumes the draft's YAML file (as the curator left it), the incident store and the curation
settings; produces a `Promotion`: the overlay's new version, the file written, the back-test it
passed and the queued incidents it now settles. A draft is refused when it does not load, when
`lint_added` finds a problem (what `denpex rules lint` would say), when it fires on a healthy
log, or when it changes a confirmed diagnosis (a curator's, or a labelled case's) to another
class. After writing, every queued incident the signature matches is diagnosed again with the
new library and, when that is confident, leaves the queue as resolved.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from pydantic import ValidationError

from denpex.curation.backtest import Backtest, Outcome, backtest
from denpex.curation.compiled import compiled, current_library
from denpex.curation.compiled import packaged_library as packaged_library
from denpex.curation.errors import CurationError, PromotionRefused
from denpex.curation.overlay import Overlay
from denpex.curation.rediagnose import rediagnose
from denpex.curation.settings import CurationSettings
from denpex.hybrid.harvest import abnormal_lines
from denpex.match.lint import lint_added
from denpex.signatures.library import Library
from denpex.signatures.signature import Signature
from denpex.store.schema import CurationState
from denpex.store.store import IncidentStore

_INCIDENT = re.compile(r"denpex incident ([0-9a-f]{32})")


def read_draft(path: Path) -> tuple[Signature, str]:
    """The draft file's signature and text; one clear error when it does not load."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise CurationError(f"{path}: cannot read the draft ({error})") from None
    return parse_draft(text, str(path)), text


def parse_draft(text: str, where: str = "draft") -> Signature:
    """A draft's signature from its YAML text; one clear error when it does not load."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise CurationError(f"{where}: not valid YAML ({error})") from None
    if not isinstance(raw, dict):
        raise CurationError(f"{where}: a draft is a YAML mapping (one signature)")
    try:
        return Signature.model_validate(raw)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in error.errors()
        )
        raise CurationError(f"{where}: {problems}") from None


@dataclass(frozen=True)
class Settled:
    incident_id: str
    before: Outcome
    after: Outcome
    resolved: bool


@dataclass
class Promotion:
    signature_id: str
    version: int
    path: Path
    backtest: Backtest
    settled: list[Settled] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {
            "signature_id": self.signature_id,
            "overlay_version": self.version,
            "path": str(self.path),
            "backtest": self.backtest.as_dict(),
            "settled": [
                {
                    "incident_id": s.incident_id,
                    "before": str(s.before),
                    "after": str(s.after),
                    "resolved": s.resolved,
                }
                for s in self.settled
            ],
        }


def check(
    draft: Signature, library: Library, store: IncidentStore, settings: CurationSettings
) -> Backtest:
    """The back-test of a draft that passes lint; raises `PromotionRefused` with every reason
    it must not be promoted."""
    base = compiled(library, settings.backend, settings.cache_dir)
    problems = [str(p) for p in lint_added(library, [draft], base)]
    if problems:
        raise PromotionRefused(draft.id, [f"breaks denpex rules lint: {p}" for p in problems])
    report = backtest(draft, library, store, settings)
    if report.refusals():
        raise PromotionRefused(draft.id, report.refusals())
    return report


def promote(
    draft: Signature,
    text: str,
    store: IncidentStore,
    settings: CurationSettings,
    *,
    by: str | None = None,
) -> Promotion:
    """Writes `text` (the draft's YAML, as the curator left it) into the overlay, unless
    `check` refuses it; then settles the queued incidents it covers."""
    library = current_library(settings)
    if draft.id in library.ids():
        raise PromotionRefused(
            draft.id, [f"{draft.id} is already in the library; give the draft a new id"]
        )
    report = check(draft, library, store, settings)
    overlay = Overlay(settings.overlay_dir)
    found = _INCIDENT.search(" ".join(draft.references))
    version = overlay.add(draft, text, incident=found.group(1) if found else None, by=by)
    promotion = Promotion(draft.id, version, overlay.path_of(draft), report)
    # The library as written is the back-test's "after" library under the overlay's new label.
    after = compiled(library, settings.backend, settings.cache_dir, [draft])
    matcher = after.relabelled(current_library(settings))
    abnormal = abnormal_lines(settings.backend, settings.cache_dir)
    for hit in report.incidents:
        if hit.curation_state != CurationState.queued:
            continue
        incident = store.get(hit.where)
        diagnosis = rediagnose(incident, matcher, abnormal, settings.threshold)
        updated = store.settle(incident.id, diagnosis, draft.id)
        promotion.settled.append(
            Settled(
                incident.id,
                Outcome.of(incident.diagnosis),
                Outcome.of(diagnosis),
                updated.curation_state == CurationState.resolved,
            )
        )
    return promotion
