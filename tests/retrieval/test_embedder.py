"""The packaged MiniLM model: offline, unit vectors, and similar failures close together."""

from __future__ import annotations

import numpy as np

from denpex.retrieval.embedder import DEFAULT_MODEL_NAME, default_model_path
from denpex.retrieval.masking import mask


def test_the_model_comes_from_the_installed_package(embedder) -> None:
    assert default_model_path().joinpath("model.safetensors").is_file()
    assert embedder.name == DEFAULT_MODEL_NAME
    assert embedder.dim == 384


def test_vectors_are_unit_length_float32(embedder) -> None:
    vectors = embedder.encode(["KeyError: 'label'", "train.py FAILED"])
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.encode([]).shape == (0, embedder.dim)


def test_two_dataloader_deaths_are_closer_than_a_dataloader_death_and_a_shape_error(
    embedder,
) -> None:
    # Real lines from tests/hybrid/corpus (worker-sigkill, worker-exit, shape-matmul).
    killed, exited, shapes = embedder.encode(
        [
            mask(
                "[rank1]: RuntimeError: DataLoader worker (pid 23198) is killed by signal: Killed."
            ),
            mask(
                "[default1]:[rank1]: RuntimeError: DataLoader worker (pid 23632) exited "
                "unexpectedly with exit code 3. Details are lost due to multiprocessing."
            ),
            mask("RuntimeError: mat1 and mat2 shapes cannot be multiplied (8x16 and 32x4)"),
        ]
    )
    assert float(killed @ exited) > float(killed @ shapes) + 0.1
