"""TRL's failure messages, from the source of a pinned release (see source.yaml).

Scope: the `trl` package a training run goes through: the trainers and their configs (SFT, DPO,
GRPO, PPO, reward, and the others under `trainer/` or, in 1.x, `experimental/`), the data
utilities and collators, the models (value heads, reference models), generation through vLLM
(the colocated engine, the client and `trl vllm-serve`'s server) and the DeepSpeed/FSDP helpers.
The command line's own argument parsing and the agent skills are out of scope: a failed training
run does not print them.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.python_messages import extract_python

INCLUDE = ("trl/",)
EXCLUDE = ("trl/cli/", "trl/commands/", "trl/skills/", "trl/testing_utils.py")
# `assert cond, "..."` is a user-facing check only in the trainers' configuration files; elsewhere
# an assert is an internal invariant unless it states a requirement (python_messages).
ASSERT_PATHS = (
    "trl/trainer/sft_config.py",
    "trl/trainer/grpo_config.py",
    "trl/trainer/dpo_config.py",
)


def extract(checkout: Path, release: str) -> list:
    return extract_python(checkout, release, "trl", INCLUDE, EXCLUDE, ASSERT_PATHS)
