"""Megatron-LM's (Megatron-Core and the training loop) failure messages, from the source of a
pinned release (see source.yaml).

Scope: `megatron/core` and `megatron/training`; raises, logger errors and warnings, warnings.warn,
and the asserts of argument and config validation (arguments.py, the *Config dataclasses).
"""

from __future__ import annotations

from pathlib import Path

from catalogs.python_messages import extract_python

INCLUDE = ("megatron/core/", "megatron/training/")
EXCLUDE = (
    "megatron/core/inference/communication/torch_symm_triton/",
    "megatron/core/transformer/custom_layers/batch_invariant_kernels.py",
)
# `assert cond, "..."` is a user-facing check only in these files (configuration and argument
# validation); elsewhere an assert is an internal invariant and is not a message users act on.
ASSERT_PATHS = (
    "megatron/training/arguments.py",
    "megatron/training/yaml_arguments.py",
    "megatron/training/checkpointing.py",
    "megatron/training/initialize.py",
    "megatron/core/transformer/transformer_config.py",
    "megatron/core/model_parallel_config.py",
    "megatron/core/distributed/distributed_data_parallel_config.py",
    "megatron/core/optimizer/optimizer_config.py",
    "megatron/core/parallel_state.py",
    "megatron/core/dist_checkpointing/",
)


def extract(checkout: Path, release: str) -> list:
    return extract_python(checkout, release, "megatron", INCLUDE, EXCLUDE, ASSERT_PATHS)
