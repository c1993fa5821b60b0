"""Real lines NVIDIA Apex printed in failed runs meet the signatures generated from its source
(catalogs/apex), and its reviewed mapping decides messages as a reviewer would.

Every log line below is copied from the public thread named beside it; the mapping cases are
format strings from the named release's source.
"""

from __future__ import annotations

import pytest

from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_catalog_reads, assert_mapped

FAMILY = "apex_cat"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/NVIDIA/apex/issues/1193 (also openai/vdvae#11): Apex installed without its
        # CUDA extensions
        ("RuntimeError: apex.optimizers.FusedAdam requires cuda extensions", "dependency_error"),
        # github.com/ROCm/pytorch-micro-benchmarking/pull/7 (also NVIDIA/apex#1364): the DDP
        # wrapper applied before amp.initialize
        (
            "RuntimeError: Incoming model is an instance of"
            " torch.nn.parallel.DistributedDataParallel. Parallel wrappers should only be applied"
            " to the model(s) AFTER ",
            "framework_config_error",
        ),
    ],
)
def test_a_real_apex_line_gets_its_class(matcher: Matcher, text: str, failure_class: str) -> None:
    assert_catalog_reads(matcher, text, FAMILY, failure_class)


def test_the_microbatch_assert_is_read_by_the_megatron_catalog_signature(
    matcher: Matcher,
) -> None:
    # Megatron-LM's check, copied into apex.transformer.microbatches (Megatron's wording): the
    # Megatron-LM catalog reads its asserts that state a requirement, so its signature, not
    # apex's nor the generic divisibility fallback, is the one that fires
    text = (
        "[rank0]: AssertionError: global batch size (16) is not divisible by micro batch size"
        " (2) times data parallel size (16)"
    )
    found = matcher.scan_text(text)
    assert found and found[0].signature.family == "megatron_cat"
    assert found[0].signature.failure_class == "framework_config_error"


@pytest.mark.parametrize(
    ("text", "level", "file", "failure_class"),
    [
        # 25.09 apex/parallel/distributed.py: a gradient that arrived twice in one backward
        (
            "The backward pass is attempting to replace an already-filled allreduce buffer.  This"
            " is almost certainly an error.",
            "RuntimeError",
            "apex/parallel/distributed.py",
            "ddp_usage_error",
        ),
        # 25.09 apex/contrib/optimizers/distributed_fused_adam.py
        (
            "Attempted to construct DistributedFusedAdam with with_scaled_state=True and"
            " store_params=False",
            "RuntimeError",
            "apex/contrib/optimizers/distributed_fused_adam.py",
            "framework_config_error",
        ),
    ],
)
def test_the_mapping_decides_apex_s_messages(
    text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped("apex", text, level, file, failure_class)
