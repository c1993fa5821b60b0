"""Real lines FairScale printed in failed runs meet the signatures generated from its source
(catalogs/fairscale), and its reviewed mapping decides messages as a reviewer would.

Every log line below is copied from the public thread named beside it; the mapping cases are
format strings from the named release's source.
"""

from __future__ import annotations

import pytest

from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_catalog_reads, assert_mapped

FAMILY = "fairscale_cat"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/meta-llama/llama/issues/306: llama's ParallelEmbedding built before
        # fairscale's initialize_model_parallel ran (fairscale 0.4, May 2023)
        ("AssertionError: model parallel group is not initialized", "framework_config_error"),
        # github.com/Lightning-AI/pytorch-lightning/issues/10745: OSS's state saved from one
        # rank without consolidate_state_dict() on all ranks first (fairscale 0.4, Nov 2021)
        (
            "RuntimeError: Optimizer state has not been consolidated on this rank.              "
            "   Please call `consolidate_state_dict()` on all ranks beforehand if you meant to"
            " save the global state",
            "ddp_usage_error",
        ),
        # github.com/facebookresearch/fairseq/issues/3353: FSDP's post-backward found a wrapped
        # module still idle (fairseq's multilingual task with FSDP, April 2021)
        (
            "expected to be in states [<TrainingState.BACKWARD_POST: 4>] but current state is"
            " TrainingState.IDLE",
            "ddp_usage_error",
        ),
    ],
)
def test_real_fairscale_lines_get_their_class(
    matcher: Matcher, text: str, failure_class: str
) -> None:
    assert_catalog_reads(matcher, text, FAMILY, failure_class)


@pytest.mark.parametrize(
    ("text", "level", "file", "failure_class"),
    [
        # 0.4.13 fairscale/optim/adam.py: FusedAdam's fp16 state scale collapsed
        (
            "Optimizer state scale < 1. This may mean that gradients are exploding",
            "RuntimeError",
            "fairscale/optim/adam.py",
            "loss_scale_underflow",
        ),
        # 0.4.13 fairscale/nn/pipe/pipe.py: more partitions than devices
        (
            "too few devices to hold given partitions (devices: {len(devices)}, partitions:"
            " {len(balance)})",
            "IndexError",
            "fairscale/nn/pipe/pipe.py",
            "launch_config_error",
        ),
        # 0.4.13 fairscale/nn/data_parallel/fully_sharded_data_parallel.py
        (
            "Require metadata for each shard and non-empty shards",
            "ValueError",
            "fairscale/nn/data_parallel/fully_sharded_data_parallel.py",
            "checkpoint_mismatch",
        ),
    ],
)
def test_the_mapping_decides_fairscale_s_messages(
    text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped("fairscale", text, level, file, failure_class)
