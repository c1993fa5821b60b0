"""The incident history denpex ships with, so that retrieval has neighbours from the first run.

Consumes the packaged `seed/incidents.jsonl`: every labelled failure of `evals/corpus` and
`evals/heldout` as the incident store holds an incident for retrieval (its masked lines) with its
label and source; produces those incidents in a store, each confirmed with its label.
`python -m denpex.retrieval.seed --write` rebuilds the file from the eval folders (run it when
cases are added); a test checks that it covers them.

The seed's template vectors ship beside it (`seed/vectors.npy`, and `seed/vectors.json` naming
the embedding model, its digest and the templates in row order), so the first unsettled
diagnosis reads them instead of embedding the whole history; a model with another digest
ignores them and embeds as usual.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
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

    Incidents are added in order, so a store that has the last one has them all: the common case
    (every run after the first) costs one lookup."""
    retrievable = [item for item in seed if item.templates]
    if not retrievable or _present(store, retrievable[-1].incident_id):
        return 0
    added = 0
    for item in retrievable:
        if _present(store, item.incident_id):
            continue
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
        store.add(draft, incident_id=item.incident_id)
        store.confirm(item.incident_id, item.failure_class, by=SEED_CURATOR, note=item.source)
        added += 1
    return added


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


# --- building the file from the eval folders ---------------------------------------------------


def build_seed(corpora: Sequence[Path]) -> list[dict[str, object]]:
    """Each labelled failure's masked lines, as the hybrid path records them."""
    from denpex.retrieval.corpus import load_corpora
    from denpex.retrieval.embedder import SentenceTransformerEmbedder
    from denpex.retrieval.evaluate import index_corpus, scratch_path
    from denpex.signatures.library import load_library

    cases = load_corpora(corpora)
    with tempfile.TemporaryDirectory(prefix="denpex-seed-") as workdir:
        path = scratch_path(Path(workdir), SentenceTransformerEmbedder())
        indexed = index_corpus(cases, path, load_library(), threshold=0.6)
        incidents = path.store.incidents(item.incident_id for item in indexed)
        by_id = {incident.id: incident for incident in incidents}
        rows = []
        for item in indexed:
            rows.append(
                {
                    "case": item.case.name,
                    "source": _source_of(item.case.directory),
                    "failure_class": item.case.failure_class,
                    "templates": by_id[item.incident_id].templates,
                }
            )
    return rows


def write_seed_vectors(rows: Sequence[dict[str, object]], directory: Path) -> int:
    """Embeds the seed's distinct templates and writes them with the model's name and digest."""
    import numpy as np

    from denpex.retrieval.embedder import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder()
    templates = list(
        dict.fromkeys(t for row in rows for t in row["templates"])  # type: ignore[attr-defined]
    )
    vectors = embedder.encode(templates)
    with (directory / SEED_VECTORS).open("wb") as stream:
        np.save(stream, vectors.astype(np.float32), allow_pickle=False)
    meta = {"embedder": embedder.name, "model_digest": embedder.digest, "templates": templates}
    (directory / SEED_VECTORS_META).write_text(
        json.dumps(meta, ensure_ascii=False, indent=0) + "\n", encoding="utf-8"
    )
    return len(templates)


def _source_of(directory: Path) -> str:
    expected = json.loads((directory / "expected.json").read_text(encoding="utf-8"))
    return str(expected.get("source") or directory.name)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "corpora", nargs="*", type=Path, default=[Path("evals/corpus"), Path("evals/heldout")]
    )
    parser.add_argument(
        "--write", action="store_true", help=f"write engine/retrieval/{SEED_RESOURCE}"
    )
    args = parser.parse_args(argv)
    rows = build_seed(args.corpora)
    text = "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows)
    if args.write:
        here = Path(__file__).resolve().parent
        target = here / SEED_RESOURCE
        target.write_text(text, encoding="utf-8")
        print(f"{len(rows)} seed incidents written to {target}")
        count = write_seed_vectors(rows, here)
        print(f"{count} template vectors written to {here / SEED_VECTORS}")
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
