"""Megatron-LM's (Megatron-Core and the training loop) failure messages, from the source of a
pinned release (see source.yaml).

Scope: `megatron/core` and `megatron/training`; raises, logger errors and warnings, warnings.warn,
and the asserts of argument and config validation (arguments.py, the *Config dataclasses).
Up to core 0.5 the training loop lived beside `megatron/core`, as modules at the top of `megatron/`
(arguments.py, training.py, checkpointing.py, ...), with `megatron/optimizer/` (moved into
`megatron/core/optimizer` in 0.6) and `megatron/tokenizer/`: both layouts are read. The legacy
models, mpu and text-generation server beside them are out of scope, as `megatron/legacy/` is later.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.python_messages import extract_python

# core 0.5's training modules and their later homes: megatron/X.py -> megatron/training/X.py
LEGACY_TRAINING = (
    "megatron/arguments.py",
    "megatron/checkpointing.py",
    "megatron/dist_signal_handler.py",
    "megatron/global_vars.py",
    "megatron/initialize.py",
    "megatron/log_handler.py",
    "megatron/microbatches.py",
    "megatron/optimizer_param_scheduler.py",
    "megatron/theoretical_memory_usage.py",
    "megatron/training.py",
    "megatron/utils.py",
    "megatron/optimizer/",
    "megatron/tokenizer/",
)
INCLUDE = ("megatron/core/", "megatron/training/", *LEGACY_TRAINING)
EXCLUDE = (
    "megatron/core/inference/communication/torch_symm_triton/",
    "megatron/core/transformer/custom_layers/batch_invariant_kernels.py",
)
# `assert cond, "..."` is a user-facing check only in these files (configuration and argument
# validation); elsewhere an assert is an internal invariant and is not a message users act on.
ASSERT_PATHS = (
    "megatron/training/arguments.py",
    "megatron/arguments.py",
    "megatron/checkpointing.py",
    "megatron/initialize.py",
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
