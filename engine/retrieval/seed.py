"""The incident history denpex ships with, so that retrieval has neighbours from the first run.

Consumes the packaged `seed/incidents.jsonl`: every labelled failure of `evals/corpus` and
`evals/heldout` as the incident store holds an incident for retrieval (its masked lines) with its
label and source; produces those incidents in a store, each confirmed with its label.
`python -m denpex.evaluation.seed --write` rebuilds the file from the eval folders (run it when
cases are added); a test checks that it covers them.

The seed's template vectors ship beside it (`seed/vectors.npy`, and `seed/vectors.json` naming
the embedding model, its digest and the templates in row order), so the first unsettled
diagnosis reads them instead of embedding the whole history; a model with another digest
ignores them and embeds as usual.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING

from denpex.models import Diagnosis, Provenance, Status
from denpex.store.records import IncidentDraft
from denpex.store.store import IncidentStore, StoreError

if TYPE_CHECKING:
    import numpy as np

SEED_CURATOR = "denpex seed history"
SEED_RESOURCE = "seed/incidents.jsonl"
SEED_VECTORS = "seed/vectors.npy"
SEED_VECTORS_META = "seed/vectors.json"
_ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/denpex/seed-history")


@dataclass(frozen=True)
class SeedIncident:
    case: str
    source: str
    failure_class: str
    templates: tuple[str, ...]

    @property
    def incident_id(self) -> str:
        """The same id in every store, so seeding twice adds nothing."""
        return uuid.uuid5(_ID_NAMESPACE, self.case).hex


def load_seed(text: str | None = None) -> list[SeedIncident]:
    """The packaged seed incidents (or those in `text`, one JSON object per line)."""
    if text is None:
        text = resources.files("denpex.retrieval").joinpath(SEED_RESOURCE).read_text("utf-8")
    incidents = []
    for line in text.splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        incidents.append(
            SeedIncident(
                case=item["case"],
                source=item["source"],
                failure_class=item["failure_class"],
                templates=tuple(item["templates"]),
            )
        )
    return incidents


def seed_store(
    store: IncidentStore, seed: Sequence[SeedIncident], *, denpex_version: str, rules_version: str
) -> int:
    """Adds the seed incidents the store lacks, confirmed with their labels; how many it added.

    Incidents are added in one transaction, so a store that has the last one has them all: the
    common case (every run after the first) costs one lookup."""
    retrievable = [item for item in seed if item.templates]
    if not retrievable or _present(store, retrievable[-1].incident_id):
        return 0
    confirmed = []
    for item in retrievable:
        diagnosis = Diagnosis(
            status=Status.unknown,
            summary=f"Seed incident {item.case} ({item.source}), labelled {item.failure_class}.",
            provenance=Provenance(
                denpex_version=denpex_version, rules_version=rules_version, elapsed_ms=0
            ),
        )
        draft = IncidentDraft(
            diagnosis=diagnosis, inputs=[], excerpt=[], templates=list(item.templates), queue=False
        )
        confirmed.append((item.incident_id, draft, item.failure_class, item.source))
    # One transaction: a store has all of the seed or none of it. Another process seeding the
    # same store, or adding one of its templates, at the same moment fails it once.
    for attempt in range(2):
        try:
            return store.add_confirmed(confirmed, by=SEED_CURATOR)
        except StoreError:
            if _present(store, retrievable[-1].incident_id):
                return 0
            if attempt:
                raise
    raise AssertionError("unreachable")


def load_seed_vectors(digest: str) -> dict[str, np.ndarray]:
    """The shipped vectors of the seed's templates, when they were made by the model with this
    digest; empty otherwise."""
    import numpy as np

    package = resources.files("denpex.retrieval")
    try:
        meta = json.loads(package.joinpath(SEED_VECTORS_META).read_text("utf-8"))
        if meta.get("model_digest") != digest:
            return {}
        with package.joinpath(SEED_VECTORS).open("rb") as stream:
            vectors = np.load(stream, allow_pickle=False)
    except (OSError, ValueError, json.JSONDecodeError):
        return {}
    templates = meta.get("templates", [])
    if len(templates) != len(vectors):
        return {}
    return {text: vectors[row] for row, text in enumerate(templates)}


def _present(store: IncidentStore, incident_id: str) -> bool:
    try:
        store.get(incident_id)
    except StoreError:
        return False
    return True
