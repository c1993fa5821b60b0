"""NVIDIA Apex's failure messages, from the source of a pinned release (see source.yaml).

- Python (`ast`): the `apex` package: amp and fp16_utils (the lines that still ship them), the
  fused and distributed optimizers (`optimizers/`, `contrib/optimizers/`: DistributedFusedAdam /
  LAMB that NeMo and Megatron stacks use), `apex.parallel` (DDP, SyncBatchNorm), `apex.transformer`
  (parallel state, tensor and pipeline parallel, microbatches), the normalization and fused
  layers, `multi_tensor_apply` and the contrib extensions' Python; raises, logger errors and
  warnings, and asserts in the set-up files. Tests, examples and the testing helpers are out.
- C++ / CUDA (`catalogs/cppsource.py`): `TORCH_CHECK(cond, ...)` / `AT_ERROR(...)` / `TORCH_WARN`
  in `csrc/` (multi-tensor optimizers' kernels, layer norm, the Megatron fused kernels, SyncBN)
  and the contrib extensions' sources (`apex/contrib/csrc/`), whose pieces reach Python as
  `RuntimeError: <text>`.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.core import Message
from catalogs.cppsource import macro_messages
from catalogs.python_messages import extract_python

EMITTER = "apex"
INCLUDE = ("apex/",)
EXCLUDE = (
    "apex/transformer/testing/",
    "apex/contrib/test/",
    "apex/contrib/examples/",
    "apex/contrib/csrc/",
    "apex/contrib/openfold_triton/",
    "apex/contrib/torchsched/",
    "apex/contrib/sparsity/permutation_search_kernels/",
)
# `assert cond, "..."` is a user-facing check where a run is set up (parallel sizes, the
# distributed optimizers' configuration, amp's initialisation); elsewhere an internal invariant.
ASSERT_PATHS = (
    "apex/transformer/parallel_state.py",
    "apex/transformer/pipeline_parallel/utils.py",
    "apex/transformer/microbatches.py",
    "apex/contrib/optimizers/distributed_fused_adam.py",
    "apex/contrib/optimizers/distributed_fused_lamb.py",
    "apex/amp/frontend.py",
    "apex/amp/_initialize.py",
    "apex/parallel/distributed.py",
)
MACROS = {"TORCH_CHECK": 1, "AT_ERROR": 0, "TORCH_WARN": 0, "TORCH_WARN_ONCE": 0}
LEVELS = {
    "TORCH_CHECK": "RuntimeError",
    "AT_ERROR": "RuntimeError",
    "TORCH_WARN_ONCE": "TORCH_WARN",
}
CPP_ROOTS = ("csrc", "apex/contrib/csrc")
SUFFIXES = {".cpp", ".cu", ".h", ".cuh", ".cc"}


def cpp_messages(checkout: Path, release: str) -> list[Message]:
    found: list[Message] = []
    for root in CPP_ROOTS:
        for path in sorted((checkout / root).rglob("*")):
            if path.suffix not in SUFFIXES or not path.is_file():
                continue
            rel = path.relative_to(checkout).as_posix()
            text = path.read_text(encoding="utf-8", errors="replace")
            for m in macro_messages(text, MACROS):
                level = LEVELS.get(m.level, m.level)
                found.append(
                    Message(EMITTER, release, m.text, m.style, rel, m.line, level, m.function)
                )
    return found


def extract(checkout: Path, release: str) -> list[Message]:
    python = extract_python(checkout, release, EMITTER, INCLUDE, EXCLUDE, ASSERT_PATHS)
    return python + cpp_messages(checkout, release)
