"""Accelerate's failure messages, from the source of a pinned release (see source.yaml).

Scope: the `accelerate` package (Accelerator, state, launchers, utils for DeepSpeed/FSDP/Megatron
plugins, checkpointing, big-model loading).
"""

from __future__ import annotations

from pathlib import Path

from catalogs.python_messages import extract_python

INCLUDE = ("src/accelerate/",)
EXCLUDE = ("src/accelerate/test_utils/", "src/accelerate/commands/config/")
# `assert cond, "..."` is a user-facing check only in these files (configuration and argument
# validation); elsewhere an assert is an internal invariant and is not a message users act on.
ASSERT_PATHS = (
    "src/accelerate/state.py",
    "src/accelerate/accelerator.py",
    "src/accelerate/utils/dataclasses.py",
)


def extract(checkout: Path, release: str) -> list:
    return extract_python(checkout, release, "accelerate", INCLUDE, EXCLUDE, ASSERT_PATHS)
