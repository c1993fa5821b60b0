"""A store of real incidents, built once per session: fixture cases confirmed with their labels."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from denpex.evaluation.retrieval import IndexedCase, index_corpus, scratch_path
from denpex.match.scan import Matcher
from denpex.retrieval.corpus import load_cases
from denpex.retrieval.embedder import SentenceTransformerEmbedder
from tests.conftest import cache_dir, cached_library
from tests.hybrid.support import copy_cases

# Three of a kind for each class the retrieval tests lean on, plus singletons and a clean run.
STORED_CASES = [
    "ckpt-missing",
    "ckpt-size",
    "ckpt-unexpected",
    "killed-rank0",
    "killed-rank1",
    "killed-rank2",
    "stall-rank0",
    "stall-rank1",
    "stall-rank2",
    "worker-exit",
    "worker-sigkill",
    "exc-keyerror",
    "poisoned-sample",
    "clean",
]


@pytest.fixture(scope="session", autouse=True)
def _library_compiled_once(compiled_once) -> None:
    """Hybrid tests diagnose with no matcher (as the CLI and the API do); see `compiled_once`."""


@pytest.fixture(scope="session")
def embedder() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()


@pytest.fixture(scope="session")
def stored_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_cases(STORED_CASES, tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="session")
def indexed(
    tmp_path_factory: pytest.TempPathFactory, stored_corpus: Path, embedder
) -> Iterator[tuple[object, dict[str, IndexedCase]]]:
    """(the recording hybrid path, the stored cases by name); the store holds every labelled
    case, confirmed with its label, as a curator would have left it."""
    path = scratch_path(tmp_path_factory.mktemp("store"), embedder)
    matcher = Matcher(cached_library(), cache_dir=cache_dir())
    cases = index_corpus(load_cases(stored_corpus), path, matcher, threshold=0.6)
    yield path, {item.case.name: item for item in cases}
    path.store.close()
