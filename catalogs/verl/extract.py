"""verl's failure messages, from the source of a pinned release (see source.yaml).

Scope: the `verl` package an RL post-training run drives: the PPO/GRPO trainer and its
configuration checks (`trainer/`, `trainer/config`, `workers/config`), the single controller on
Ray (resource pools, placement groups, worker groups), the FSDP and Megatron workers, actors,
critics and engines, the vLLM and SGLang rollouts and their weight sync, the reward managers and
reward loop, the datasets (RL parquet prompts, SFT, multi-turn), checkpoint save/load and the
model merger, and the utilities they share; raises, logger errors and warnings, and the `print()`
calls verl uses as warnings (a text tagged "WARN:", "Warning:", "Error:"). Out of scope: the
examples, recipes and tests outside `verl/`, and the vendored copies under `verl/third_party`
(vLLM's, SGLang's and PyTorch's own code, whose messages their catalogs read); verl's own vLLM
version dispatch, `verl/third_party/vllm/__init__.py`, is read.
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.python_messages import extract_python

INCLUDE = ("verl/",)
# the vendored upstream code (0.3-0.4: vLLM 0.3-0.6 model runners, SGLang's parallel_state; 0.7:
# torch.distributed.checkpoint's state_dict helpers)
EXCLUDE = (
    "verl/third_party/vllm/vllm_",
    "verl/third_party/sglang/",
    "verl/third_party/torch/",
)
# `assert cond, "..."` is a user-facing check in the trainer and its configuration (the batch
# arithmetic of ray_trainer's validation, the config dataclasses), the workers' normalization of
# the batch sizes by the world size, the rollouts' length and parallel-size checks, the single
# controller's resource pools, the datasets and checkpoint loading; elsewhere an assert is an
# internal invariant unless it states a requirement (python_messages). The internal invariants
# these paths still hold are told apart in mapping.yaml.
ASSERT_PATHS = (
    "verl/trainer/",
    "verl/workers/config/",
    "verl/workers/fsdp_workers.py",
    "verl/workers/megatron_workers.py",
    "verl/workers/engine_workers.py",
    "verl/workers/rollout/",
    "verl/single_controller/ray/base.py",
    "verl/utils/config.py",
    "verl/utils/dataset/",
    "verl/utils/checkpoint/",
)
# verl warns with print(): only the prints whose text says so are failure reports (the others
# are progress and metrics).
NAMED = {"print": "PRINT"}
_PRINT_TAG = re.compile(r"^\s*\[?(?:WARN(?:ING)?|Warn(?:ing)?|ERROR|Error|FATAL|CRITICAL)\b")


def extract(checkout: Path, release: str) -> list:
    found = extract_python(checkout, release, "verl", INCLUDE, EXCLUDE, ASSERT_PATHS, named=NAMED)
    return [m for m in found if m.level != "PRINT" or _PRINT_TAG.match(m.text)]
