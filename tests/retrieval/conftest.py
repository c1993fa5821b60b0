"""The real embedding model, loaded once per test session."""

from __future__ import annotations

import pytest

from denpex.retrieval.embedder import SentenceTransformerEmbedder


@pytest.fixture(scope="session")
def embedder() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()
