"""Finding similar incidents: incremental indexing, labels, exclusion and the class vote."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from denpex.retrieval.index import FaissIndex
from denpex.retrieval.similar import ClassVote, Neighbour, SimilarIncidents, line_similarity, vote
from denpex.store.records import Label, LabelSource
from denpex.store.store import open_store, store_url
from tests.hybrid.support import case_inputs, draft_of, observe

CASES = ["ckpt-size", "ckpt-missing", "killed-rank0", "killed-rank1", "exc-keyerror"]
LABELS = {
    "ckpt-size": "checkpoint_mismatch",
    "ckpt-missing": "checkpoint_mismatch",
    "killed-rank0": "process_killed",
    "killed-rank1": "process_killed",
    "exc-keyerror": "python_exception",
}


@pytest.fixture(scope="module")
def observed():
    return {name: observe(case_inputs(name), threshold=0.99) for name in CASES}


@pytest.fixture
def similar(tmp_path: Path, embedder, observed):
    store = open_store(store_url(str(tmp_path / "s.db")))
    ids = {}
    for name in CASES:
        ids[name] = store.add(draft_of(observed[name], queue=True))
        store.confirm(ids[name], LABELS[name], by="test")
    index = FaissIndex(embedder.dim, embedder.name, tmp_path / "s.db.faiss")
    yield SimilarIncidents(store, embedder, index), ids
    store.close()


def test_the_index_embeds_each_template_once_and_then_only_new_ones(similar, observed) -> None:
    finder, _ = similar
    first = finder.sync()
    assert first == len({t for o in observed.values() for t in o.templates})
    assert finder.sync() == 0
    again = observe(case_inputs("worker-exit"), threshold=0.99)
    finder.store.add(draft_of(again, queue=True))
    new = set(again.templates) - {t for o in observed.values() for t in o.templates}
    assert finder.sync() == len(new) > 0


def test_the_nearest_incident_is_the_same_failure_and_never_the_query_itself(
    similar, observed
) -> None:
    finder, ids = similar
    found = finder.search(
        observed["ckpt-size"].templates, k=3, exclude=frozenset({ids["ckpt-size"]})
    )
    assert ids["ckpt-size"] not in {n.incident_id for n in found}
    assert found[0].incident_id == ids["ckpt-missing"]
    assert found[0].label == Label(failure_class="checkpoint_mismatch", source=LabelSource.curator)
    assert found[0].similarity > found[1].similarity
    assert "Error(s) in loading state_dict" in found[0].pairs[0].query


def test_an_incident_without_a_known_cause_is_never_a_neighbour(similar, observed) -> None:
    finder, _ = similar
    waiting = finder.store.add(
        draft_of(observe(case_inputs("killed-rank2"), threshold=0.99), queue=True)
    )
    query = observed["killed-rank0"].templates
    assert waiting not in {n.incident_id for n in finder.search(query, k=10)}
    finder.store.confirm(waiting, "process_killed")
    assert waiting in {n.incident_id for n in finder.search(query, k=10)}


def test_the_index_file_is_reused_by_the_next_process(similar, embedder, observed) -> None:
    finder, _ = similar
    finder.sync()
    reopened = FaissIndex(embedder.dim, embedder.name, finder.index.path)
    assert reopened.ids() == finder.store.template_ids()
    assert SimilarIncidents(finder.store, embedder, reopened).sync() == 0


def _neighbour(name: str, failure_class: str, similarity: float) -> Neighbour:
    return Neighbour(name, similarity, Label(failure_class=failure_class, source=LabelSource.rules))


def test_a_near_exact_match_outweighs_several_loose_ones() -> None:
    votes = vote(
        [
            _neighbour("a", "process_killed", 1.0),
            _neighbour("b", "native_crash", 0.6),
            _neighbour("c", "native_crash", 0.6),
            _neighbour("d", "native_crash", 0.6),
        ]
    )
    assert [v.failure_class for v in votes] == ["process_killed", "native_crash"]
    assert sum(v.share for v in votes) == pytest.approx(1.0, abs=1e-3)
    assert isinstance(votes[0], ClassVote) and votes[0].neighbours[0].incident_id == "a"
    assert vote([]) == []


def test_one_decisive_word_separates_lines_the_embedding_calls_alike(embedder) -> None:
    # torchrun failure-summary lines of tests/hybrid/corpus segv-rank1 and killed-rank1, masked.
    segv = "traceback : Signal <NUM> (SIGSEGV) received by PID <NUM>"
    kill = "traceback : Signal <NUM> (SIGKILL) received by PID <NUM>"
    a, b = embedder.encode([segv, kill])
    cosine = float(a @ b)
    assert line_similarity(1.0, segv, segv) == 1.0
    # Five of their seven words are shared; the one that differs names the signal.
    assert line_similarity(cosine, segv, kill) == pytest.approx((cosine + 5 / 7) / 2)
    assert line_similarity(cosine, segv, kill) < cosine


class CountingEmbedder:
    """The real embedder, counting the lines it is asked to embed."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.embedded: list[str] = []
        self.name, self.dim = inner.name, inner.dim

    def encode(self, texts):
        self.embedded += list(texts)
        return self.inner.encode(texts)


def test_a_query_of_known_lines_is_read_back_not_embedded_again(similar, embedder, observed):
    finder, _ = similar
    finder.sync()
    counting = CountingEmbedder(embedder)
    reading = SimilarIncidents(finder.store, counting, finder.index)
    reading.search(observed["killed-rank0"].templates, k=3)
    assert counting.embedded == []
    stored = finder.store.templates()
    read_back = finder.index.vectors([template_id for template_id, _ in stored])
    assert np.allclose(read_back, embedder.encode([text for _, text in stored]), atol=1e-5)
    reading.search(["KeyError: 'input_ids'"], k=1)
    assert counting.embedded == ["KeyError: 'input_ids'"]
