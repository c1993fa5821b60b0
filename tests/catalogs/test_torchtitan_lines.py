"""Real lines torchtitan printed in failed runs meet the signatures generated from its source
(catalogs/torchtitan), and its reviewed mapping decides messages as a reviewer would.

Every log line below is copied from the public thread named beside it; the mapping cases are
format strings from the named release's source.
"""

from __future__ import annotations

import pytest

from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_catalog_reads, assert_mapped

FAMILY = "torchtitan_cat"


def test_a_real_torchtitan_line_gets_its_class(matcher: Matcher) -> None:
    # github.com/pytorch/torchtitan/issues/2184: llama4's parallelize asked for the tensor
    # parallel mesh with tensor_parallel_degree=1 (torchtitan main, December 2025)
    text = (
        "  ValueError: Mesh 'tp' is not available. Ensure the corresponding parallelism dimension"
        " is enabled (size > 1)."
    )
    assert_catalog_reads(matcher, text, FAMILY, "framework_config_error")


@pytest.mark.parametrize(
    ("text", "level", "file", "failure_class"),
    [
        # 0.2 torchtitan/components/dataloader.py: one rank's data ends before the others'
        (
            "Dataset {self.dataset_name} has run out of data.                          This might"
            " cause NCCL timeout if data parallelism is enabled.",
            "WARNING",
            "torchtitan/datasets/hf_datasets.py",
            "collective_mismatch",
        ),
        # 0.2 torchtitan/components/checkpoint.py
        (
            "checkpoint.initial_load_path is specified but the path is not valid.",
            "ValueError",
            "torchtitan/components/checkpoint.py",
            "checkpoint_mismatch",
        ),
        # 0.2 torchtitan/distributed/pipeline_parallel.py
        (
            "Number of stages ({num_stages}) cannot be greater than effective layers"
            " ({num_effective_layers})",
            "ValueError",
            "torchtitan/distributed/pipeline_parallel.py",
            "framework_config_error",
        ),
    ],
)
def test_the_mapping_decides_torchtitan_s_messages(
    text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped("torchtitan", text, level, file, failure_class)
