"""FairScale's failure messages, from the source of a pinned release (see source.yaml).

Scope: the `fairscale` package a training run imports: FullyShardedDataParallel and its
flatten-params wrapper and optimizer-state helpers, ShardedDataParallel, OSS and the sharded grad
scaler, the pipelines (Pipe, the multi-process and RPC pipes, balance, skip connections), the
model-parallel set-up (`initialize_model_parallel`, its RNG tracker), activation checkpointing,
auto-wrap, MoE and the internal state-dict and version helpers; raises, logger errors and
warnings, `warnings.warn`, and the asserts of the wrappers' and the model-parallel set-up's
argument checks. Out of scope: `experimental/` (prototypes), `fair_dev/` (its test harness)
and the compiled Adam kernels.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.python_messages import extract_python

INCLUDE = ("fairscale/",)
EXCLUDE = ("fairscale/experimental/", "fairscale/fair_dev/", "fairscale/utils/testing")
# `assert cond, "..."` is a user-facing check in the wrappers' constructors and state-dict paths
# and in the model-parallel set-up (it names the argument or state that does not fit);
# elsewhere an assert is an internal invariant.
ASSERT_PATHS = (
    "fairscale/nn/data_parallel/",
    "fairscale/nn/model_parallel/initialize.py",
    "fairscale/nn/pipe/pipe.py",
    "fairscale/nn/pipe/multiprocess_pipe.py",
    "fairscale/nn/pipe/async_pipe.py",
    "fairscale/nn/wrap/",
    "fairscale/optim/oss.py",
)


def extract(checkout: Path, release: str) -> list:
    return extract_python(checkout, release, "fairscale", INCLUDE, EXCLUDE, ASSERT_PATHS)
