"""DeepSpeed's failure messages, from the source of a pinned release (see source.yaml).

Scope: the `deepspeed` package (runtime, ZeRO, launcher, comm, checkpoint, ops loaders, inference);
raises, logger errors and warnings, and asserts in the configuration and engine set-up.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.python_messages import extract_python

INCLUDE = ("deepspeed/",)
EXCLUDE = (
    "deepspeed/inference/v2/kernels/",
    "deepspeed/ops/deepspeed4science/",
    "deepspeed/autotuning/",
)
# `assert cond, "..."` is a user-facing check only in these files (configuration and argument
# validation); elsewhere an assert is an internal invariant and is not a message users act on.
ASSERT_PATHS = (
    "deepspeed/runtime/config.py",
    "deepspeed/runtime/config_utils.py",
    "deepspeed/runtime/engine.py",
    "deepspeed/runtime/zero/config.py",
    "deepspeed/runtime/zero/offload_config.py",
    "deepspeed/runtime/pipe/engine.py",
    "deepspeed/runtime/pipe/topology.py",
    "deepspeed/launcher/",
    "deepspeed/elasticity/",
    "deepspeed/utils/groups.py",
    "deepspeed/checkpoint/",
    "deepspeed/runtime/state_dict_factory.py",
)


def extract(checkout: Path, release: str) -> list:
    return extract_python(checkout, release, "deepspeed", INCLUDE, EXCLUDE, ASSERT_PATHS)
