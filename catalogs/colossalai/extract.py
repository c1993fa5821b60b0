"""ColossalAI's failure messages, from the source of a pinned release (see source.yaml).

Scope: the `colossalai` launcher (`colossalai run`: the hostfile, the per-host commands and its
`click.echo` reports), the Booster and its plugins (Gemini, LowLevelZero, HybridParallel,
MoeHybridParallel, Torch DDP/FSDP), ZeRO, checkpoint I/O, the cluster and process-group set-up,
the accelerator and kernel loaders, pipeline p2p and ShardFormer's shard/policy set-up; raises,
logger errors and warnings, warnings.warn, and the asserts of the plugin and launch
configuration. The legacy API, the tracer/auto-parallel analysers, the inference engine,
per-model ShardFormer modeling code, Triton/CUDA kernel wrappers and the test helpers are out of
scope.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.python_messages import extract_python

INCLUDE = (
    "colossalai/cli/",
    "colossalai/booster/",
    "colossalai/zero/",
    "colossalai/checkpoint_io/",
    "colossalai/cluster/",
    "colossalai/accelerator/",
    "colossalai/kernel/kernel_loader.py",
    "colossalai/kernel/extensions/",
    "colossalai/pipeline/",
    "colossalai/shardformer/shard/",
    "colossalai/shardformer/policies/base_policy.py",
    "colossalai/shardformer/policies/auto_policy.py",
    "colossalai/moe/",
    "colossalai/amp/",
    "colossalai/initialize.py",
    "colossalai/interface/",
    "colossalai/lazy/",
    "colossalai/utils/",
)
EXCLUDE = ("colossalai/legacy/",)
# `assert cond, "..."` is a user-facing check only in these files (plugin, launch and checkpoint
# configuration); elsewhere an assert is an internal invariant and is not a message users act on.
ASSERT_PATHS = (
    "colossalai/booster/plugin/",
    "colossalai/booster/booster.py",
    "colossalai/cli/",
    "colossalai/initialize.py",
    "colossalai/cluster/",
    "colossalai/shardformer/shard/shard_config.py",
    "colossalai/checkpoint_io/",
)
# `colossalai run` reports through click.echo (level ECHO: its errors and its node status lines;
# mapping.yaml keeps only the ones that state a failure).
NAMED = {"click.echo": "ECHO"}


def extract(checkout: Path, release: str) -> list:
    return extract_python(
        checkout, release, "colossalai", INCLUDE, EXCLUDE, ASSERT_PATHS, named=NAMED
    )
