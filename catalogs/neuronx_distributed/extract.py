"""AWS Neuron's neuronx-distributed: its failure messages, from the source of a pinned release
(see source.yaml).

Scope: the `neuronx_distributed` package's training side, which a distributed run on Trainium
goes through: parallel state (tensor, pipeline, expert, context parallel groups), parallel
layers, the pipeline engine, checkpointing, the optimizer wrappers, the trainer and its
Lightning strategy, MoE modules, and utilities; raises, logger errors and warnings, and asserts in
the set-up files. The compiler and runtime (neuronx-cc, torch-neuronx, the Neuron runtime) are not
open source and are out of scope; so are the inference tracer (`trace/`), the NKI kernels and the
quantization scripts.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.python_messages import extract_python

INCLUDE = ("src/neuronx_distributed/",)
EXCLUDE = (
    "src/neuronx_distributed/trace/",
    "src/neuronx_distributed/kernels/",
    "src/neuronx_distributed/scripts/",
    "src/neuronx_distributed/experimental/",
    "src/neuronx_distributed/quantization/",
    "src/neuronx_distributed/utils/tensor_capture/",
    "src/neuronx_distributed/utils/tensor_replacement/",
)
# `assert cond, "..."` is a user-facing check only where the run is set up (parallel sizes, the
# pipeline's partitioning, the trainer's and checkpoint's configuration); elsewhere an assert is
# an internal invariant.
ASSERT_PATHS = (
    "src/neuronx_distributed/parallel_layers/parallel_state.py",
    "src/neuronx_distributed/pipeline/model.py",
    "src/neuronx_distributed/pipeline/partition.py",
    "src/neuronx_distributed/trainer/",
    "src/neuronx_distributed/parallel_layers/checkpointing.py",
    "src/neuronx_distributed/utils/model_utils.py",
    "src/neuronx_distributed/lightning/",
)


def extract(checkout: Path, release: str) -> list:
    return extract_python(checkout, release, "neuronx_distributed", INCLUDE, EXCLUDE, ASSERT_PATHS)
