"""The seed history: every labelled eval failure, ready to give retrieval neighbours at once."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from denpex.retrieval.seed import SEED_CURATOR, load_seed, seed_store
from denpex.store.store import open_store, store_url
from tests.conftest import REPO


def _labelled_failures() -> dict[str, str]:
    labels = {}
    for folder in ("corpus", "heldout"):
        for expected in sorted((REPO / "evals" / folder).glob("*/expected.json")):
            document = json.loads(expected.read_text(encoding="utf-8"))
            # A case labelled `unknown` (a cause with no taxonomy class) has no class a
            # curator could confirm, so it is not indexed.
            if document["failure_class"] not in (None, "unknown"):
                labels[document["case"]] = document["failure_class"]
    return labels


def test_the_packaged_seed_is_every_labelled_failure_of_the_evals_with_its_label() -> None:
    seed = {item.case: item.failure_class for item in load_seed()}
    assert seed == _labelled_failures(), (
        "engine/retrieval/seed/incidents.jsonl is stale: "
        "run python -m denpex.evaluation.seed --write"
    )
    # A case in which denpex finds no abnormal line at all has nothing to be retrieved by.
    without_lines = [item.case for item in load_seed() if not item.templates]
    assert len(without_lines) <= len(seed) // 20, without_lines


def test_seeding_adds_each_incident_once_confirmed_with_its_label(tmp_path: Path) -> None:
    store = open_store(store_url(str(tmp_path / "incidents.sqlite")))
    seed = load_seed()[:5]
    assert seed_store(store, seed, denpex_version="test", rules_version="seed") == 5
    assert seed_store(store, seed, denpex_version="test", rules_version="seed") == 0
    first = store.get(seed[0].incident_id)
    assert first.confirmed_class == seed[0].failure_class
    assert first.confirmed_by == SEED_CURATOR
    assert first.confirmed_note == seed[0].source
    assert first.templates == list(seed[0].templates)
    assert store.count() == 5


def test_stores_seeded_at_the_same_moment_hold_the_seed_once(tmp_path: Path) -> None:
    # The whole seed is one transaction: of several writers seeding one new store at once, one
    # adds it and the others find it there.
    url = store_url(str(tmp_path / "incidents.db"))
    seed = load_seed()

    def seeded(_: int) -> int:
        store = open_store(url)
        try:
            return seed_store(store, seed, denpex_version="0", rules_version="seed")
        finally:
            store.close()

    with ThreadPoolExecutor(max_workers=4) as pool:
        added = list(pool.map(seeded, range(4)))
    retrievable = [item for item in seed if item.templates]
    assert sorted(added) == [0, 0, 0, len(retrievable)]
    store = open_store(url)
    assert store.count() == len(retrievable)
    assert {i.confirmed_class for i in store.incidents([retrievable[0].incident_id])} == {
        retrievable[0].failure_class
    }
    store.close()


def test_the_seed_vectors_ship_for_every_template_with_the_models_digest() -> None:
    from denpex.retrieval.embedder import SentenceTransformerEmbedder
    from denpex.retrieval.seed import load_seed_vectors

    vectors = load_seed_vectors(SentenceTransformerEmbedder().digest)
    assert {t for item in load_seed() for t in item.templates} <= set(vectors), (
        "rebuild with python -m denpex.evaluation.seed --write"
    )
    assert load_seed_vectors("the digest of another model") == {}


class _Counting:
    """The real embedder, counting the lines it is asked to embed."""

    def __init__(self) -> None:
        from denpex.retrieval.embedder import SentenceTransformerEmbedder

        self.inner = SentenceTransformerEmbedder()
        self.embedded = 0
        self.name, self.digest = self.inner.name, self.inner.digest

    @property
    def dim(self) -> int:
        return self.inner.dim

    def encode(self, texts):  # type: ignore[no-untyped-def]
        self.embedded += len(texts)
        return self.inner.encode(texts)


def test_the_first_retrieval_reads_the_seed_vectors_instead_of_embedding_them(
    tmp_path: Path,
) -> None:
    from denpex.hybrid.path import HybridPath
    from denpex.hybrid.settings import HybridSettings

    embedder = _Counting()
    settings = HybridSettings(store_url=store_url(str(tmp_path / "s.db")), seed=True)
    path = HybridPath(settings, embedder=embedder)
    assert path.similar.sync() > 100
    assert embedder.embedded == 0
