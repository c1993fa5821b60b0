"""The faiss index: exact cosine search by template id, persisted atomically, rebuilt if stale."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from denpex.retrieval.index import FaissIndex

LINES = [
    "KeyError: 'label'",
    "RuntimeError: DataLoader worker (pid <NUM>) is killed by signal: Killed.",
    "RuntimeError: Function 'SqrtBackward0' returned nan values in its <NUM>th output.",
]


@pytest.fixture(scope="module")
def vectors(embedder) -> np.ndarray:
    return embedder.encode(LINES)


def test_each_line_finds_itself_first(embedder, vectors) -> None:
    index = FaissIndex(embedder.dim, embedder.name)
    index.add([10, 20, 30], vectors)
    hits = index.search(vectors, k=2)
    assert [row[0][0] for row in hits] == [10, 20, 30]
    assert all(row[0][1] == pytest.approx(1.0, abs=1e-5) for row in hits)
    assert all(row[0][1] > row[1][1] for row in hits)


def test_the_index_survives_a_restart_and_removals(tmp_path: Path, embedder, vectors) -> None:
    path = tmp_path / "incidents.db.faiss"
    index = FaissIndex(embedder.dim, embedder.name, path)
    index.add([1, 2, 3], vectors)
    index.remove([2])
    index.save()
    again = FaissIndex(embedder.dim, embedder.name, path)
    assert again.ids() == {1, 3}
    assert again.warnings == []
    assert [row[0][0] for row in again.search(vectors[[0, 2]], k=1)] == [1, 3]
    assert not list(tmp_path.glob(".incidents.db.faiss.*")), "no temporary file is left behind"


def test_an_index_of_another_model_is_rebuilt_not_mixed(tmp_path: Path, embedder, vectors) -> None:
    path = tmp_path / "x.faiss"
    index = FaissIndex(embedder.dim, embedder.name, path)
    index.add([1, 2, 3], vectors)
    index.save()
    other = FaissIndex(embedder.dim, "another-model", path)
    assert len(other) == 0
    assert "rebuilding" in other.warnings[0]


def test_a_corrupt_index_file_is_rebuilt_with_a_warning(tmp_path: Path, embedder) -> None:
    path = tmp_path / "x.faiss"
    FaissIndex(embedder.dim, embedder.name, path).save()
    path.write_bytes(b"\x00garbage" * 10)
    index = FaissIndex(embedder.dim, embedder.name, path)
    assert len(index) == 0
    assert "unreadable" in index.warnings[0]


def test_vectors_of_the_wrong_size_are_refused(embedder) -> None:
    index = FaissIndex(embedder.dim, embedder.name)
    with pytest.raises(ValueError, match="expected 1 vectors"):
        index.add([1], np.zeros((1, 7), dtype=np.float32))


def test_the_saved_index_is_readable_by_its_owner_only_like_the_store(
    tmp_path: Path, embedder, vectors
) -> None:
    import stat

    path = tmp_path / "incidents.faiss"
    index = FaissIndex(embedder.dim, embedder.name, path)
    index.add([1, 2, 3], vectors)
    index.save()
    saved = [p for p in tmp_path.iterdir() if p.name.startswith("incidents")]
    assert len(saved) == 2, saved  # the index and its sidecar
    assert {stat.S_IMODE(p.stat().st_mode) for p in saved} == {0o600}
