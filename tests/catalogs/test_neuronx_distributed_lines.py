"""neuronx-distributed's reviewed mapping decides its messages as a reviewer would, and the one
real neuronx-distributed line found in public threads meets the right class.

No public thread quotes a line of the catalog's own signatures (neuronx-distributed's reports
are mostly configuration checks met at start-up, and Trainium users' threads quote the
compiler's and the runtime's lines instead); the real line below is its tensor-parallel
divisibility assert, which the hand-written python.divisibility_constraint signature reads (the
catalog keeps asserts of parallel_layers/utils.py out as internal invariants).
"""

from __future__ import annotations

import pytest

from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_mapped


def test_the_real_tensor_parallel_divisibility_line_is_a_configuration_error(
    matcher: Matcher,
) -> None:
    # github.com/huggingface/optimum-neuron/issues/175: neuronx_distributed's
    # parallel_layers/utils.py ensure_divisibility, the vocabulary (50257) against tp_degree=8
    found = matcher.scan_text("AssertionError: 50257 is not divisible by 8")
    assert found and found[0].signature.failure_class == "framework_config_error"


@pytest.mark.parametrize(
    ("text", "level", "file", "failure_class"),
    [
        # 2.28 src/neuronx_distributed/parallel_layers/parallel_state.py
        (
            "Error: global rank {global_rank} is not in groups",
            "RuntimeError",
            "src/neuronx_distributed/parallel_layers/parallel_state.py",
            "launch_config_error",
        ),
        # 2.28 src/neuronx_distributed/optimizer/zero_redundancy_optimizer.py
        (
            "ZeRO-1 optimizer is not enabled, while `use_master_weights` is True.",
            "RuntimeError",
            "src/neuronx_distributed/optimizer/neuron_zero1_optimizer.py",
            "framework_config_error",
        ),
        # 2.28 src/neuronx_distributed/trainer/checkpoint.py
        (
            "Error: no checkpoint under directory {checkpoint_dir}",
            "RuntimeError",
            "src/neuronx_distributed/trainer/checkpoint.py",
            "checkpoint_mismatch",
        ),
        # 2.28 src/neuronx_distributed/optimizer/adamw_fp32_optim_params.py: a hyper-parameter,
        # not a version pin
        (
            "Invalid learning rate: {lr} - should be >= 0.0",
            "ValueError",
            "src/neuronx_distributed/optimizer/adamw_fp32_optim_params.py",
            "framework_config_error",
        ),
    ],
)
def test_the_mapping_decides_neuronx_distributed_s_messages(
    text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped("neuronx_distributed", text, level, file, failure_class)
