"""torchtitan's failure messages, from the source of a pinned release (see source.yaml).

Scope: the `torchtitan` package a training run drives: the job configuration and its manager,
the parallelisms (ParallelDims, the per-model parallelize functions: FSDP, tensor, pipeline,
context and expert parallel, torch.compile), checkpointing, float8 / MX quantization, the
optimizers, learning-rate schedulers, data loading, the fault-tolerance hooks, the trainer and
its tools; raises, logger errors and warnings, and asserts in
the configuration and set-up files. Out of scope: `experiments/` (prototypes shipped in the
tree), tests and scripts.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.python_messages import extract_python

INCLUDE = ("torchtitan/",)
EXCLUDE = ("torchtitan/experiments/",)
# `assert cond, "..."` is a user-facing check in the configuration, the parallel layout and the
# parallelize functions (it names the setting that does not fit); elsewhere an assert is an
# internal invariant.
ASSERT_PATHS = (
    "torchtitan/config",
    "torchtitan/distributed/",
    "torchtitan/components/",
    "torchtitan/train.py",
    "torchtitan/models/llama3/infra/",
    "torchtitan/models/llama4/infra/",
    "torchtitan/models/deepseek_v3/infra/",
    "torchtitan/models/qwen3/infra/",
    "torchtitan/models/llama3/parallelize",
    "torchtitan/models/llama4/parallelize",
    "torchtitan/models/deepseek_v3/parallelize",
)


def extract(checkout: Path, release: str) -> list:
    return extract_python(checkout, release, "torchtitan", INCLUDE, EXCLUDE, ASSERT_PATHS)
