"""A persistent vector index of line templates, updated in place.

Consumes (id, vector) pairs and query vectors; produces, per query, the nearest ids with their
inner-product scores. `VectorIndex` is the narrow interface; `FaissIndex` is the real one: an
exact inner-product index (vectors are unit length, so scores are cosine similarities) keyed by
the store's template ids, saved atomically to a file beside the store with a small sidecar that
names the embedder, so vectors of different models are never mixed.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np


class VectorIndex(Protocol):
    def ids(self) -> set[int]: ...

    def add(self, ids: Sequence[int], vectors: np.ndarray) -> None: ...

    def remove(self, ids: Iterable[int]) -> None: ...

    def vectors(self, ids: Sequence[int]) -> np.ndarray:
        """The stored vectors of these ids, one row each."""
        ...

    def search(self, vectors: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
        """Per query row, up to k (id, score) pairs, best first."""
        ...

    def save(self) -> None: ...


class FaissIndex:
    """Exact cosine search over template vectors, optionally persisted at `path`."""

    def __init__(self, dim: int, embedder_name: str, path: Path | None = None) -> None:
        self.dim = dim
        self.embedder_name = embedder_name
        self.path = path
        self.warnings: list[str] = []
        self._index = self._load() if path is not None else None
        if self._index is None:
            self._index = self._empty()

    @property
    def _meta_path(self) -> Path | None:
        return None if self.path is None else self.path.with_name(self.path.name + ".json")

    def _empty(self) -> Any:
        import faiss

        return faiss.IndexIDMap2(faiss.IndexFlatIP(self.dim))

    def _load(self) -> Any:
        import faiss

        assert self.path is not None and self._meta_path is not None
        if not self.path.exists():
            return None
        try:
            meta = json.loads(self._meta_path.read_text(encoding="utf-8"))
            if meta != {"embedder": self.embedder_name, "dim": self.dim}:
                self.warnings.append(
                    f"{self.path}: built with {meta}, not {self.embedder_name}; rebuilding it"
                )
                return None
            index = faiss.read_index(str(self.path))
        except (OSError, ValueError, RuntimeError) as error:
            self.warnings.append(f"{self.path}: unreadable ({error}); rebuilding it")
            return None
        if index.d != self.dim:
            self.warnings.append(f"{self.path}: vectors of size {index.d}; rebuilding it")
            return None
        return index

    def __len__(self) -> int:
        return int(self._index.ntotal)

    def ids(self) -> set[int]:
        import faiss

        return {int(i) for i in faiss.vector_to_array(self._index.id_map)}

    def add(self, ids: Sequence[int], vectors: np.ndarray) -> None:
        import numpy as np

        if len(ids) == 0:
            return
        if vectors.shape != (len(ids), self.dim):
            raise ValueError(f"expected {len(ids)} vectors of size {self.dim}, got {vectors.shape}")
        self._index.add_with_ids(
            np.ascontiguousarray(vectors, dtype=np.float32), np.asarray(ids, dtype=np.int64)
        )

    def remove(self, ids: Iterable[int]) -> None:
        import numpy as np

        doomed = np.asarray(sorted(set(ids)), dtype=np.int64)
        if len(doomed):
            self._index.remove_ids(doomed)

    def vectors(self, ids: Sequence[int]) -> np.ndarray:
        import numpy as np

        rows = [self._index.reconstruct(int(i)) for i in ids]
        return np.vstack(rows) if rows else np.zeros((0, self.dim), dtype=np.float32)

    def search(self, vectors: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
        import numpy as np

        if len(self) == 0 or len(vectors) == 0:
            return [[] for _ in range(len(vectors))]
        k = min(k, len(self))
        scores, ids = self._index.search(np.ascontiguousarray(vectors, dtype=np.float32), k)
        return [
            [(int(i), float(s)) for i, s in zip(row_ids, row_scores, strict=True) if i >= 0]
            for row_ids, row_scores in zip(ids, scores, strict=True)
        ]

    def save(self) -> None:
        """Writes the index and its sidecar atomically; readers never see half a file."""
        import faiss

        if self.path is None or self._meta_path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        meta = json.dumps({"embedder": self.embedder_name, "dim": self.dim})
        _atomic_write(self._meta_path, meta.encode())
        _atomic_write(self.path, bytes(faiss.serialize_index(self._index)))


def _atomic_write(path: Path, data: bytes) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        # mkstemp makes it readable by its owner only, as the store beside it is (0600): the
        # vectors are of incidents' lines.
        Path(temporary).replace(path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
