"""Real lines nanotron printed in failed runs meet the signatures generated from its source
(catalogs/nanotron), and its reviewed mapping decides messages as a reviewer would.

Every log line below is copied from the public thread named beside it; the mapping cases are
format strings from the named release's source.
"""

from __future__ import annotations

import pytest

from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_catalog_reads, assert_mapped

FAMILY = "nanotron_cat"


def test_a_real_nanotron_line_gets_its_class(matcher: Matcher) -> None:
    # github.com/huggingface/nanotron/issues/121: the tiny-llama example's config had no data
    # stage starting at step 1 (nanotron main, March 2024)
    text = (
        "AssertionError: You must have a training stage starting at 1 in the config's data_stages"
    )
    assert_catalog_reads(matcher, text, FAMILY, "framework_config_error")


@pytest.mark.parametrize(
    ("text", "level", "file", "failure_class"),
    [
        # 0.5 src/nanotron/parallel/context.py: the world size against dp x tp x pp
        (
            "The number of process requires to run all replicas"
            " ({num_gpus_per_model * data_parallel_size})",
            "ValueError",
            "src/nanotron/parallel/context.py",
            "launch_config_error",
        ),
        # main src/nanotron/serialize/weights.py
        (
            "Checkpoint is empty or checkpoint structure is not matching the model"
            " architecture.Couldn't find folder {path.parent} in checkpoint at {root_folder}",
            "ValueError",
            "src/nanotron/serialize/weights.py",
            "checkpoint_mismatch",
        ),
        # main src/nanotron/data/nanoset.py: a tokenized file shorter than its index says
        (
            "Expected {chunk_size} bytes from file but got {len(chunk)}",
            "AssertionError",
            "src/nanotron/data/nanoset.py",
            "corrupt_or_missing_data",
        ),
        # main src/nanotron/config/config.py: the dataset weights are not data, they are config
        (
            "Number of dataset weights ({len(self.dataset_weights)}) does not match number of"
            " dataset folders ({len(self.dataset_folder)})",
            "ValueError",
            "src/nanotron/config/config.py",
            "framework_config_error",
        ),
    ],
)
def test_the_mapping_decides_nanotron_s_messages(
    text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped("nanotron", text, level, file, failure_class)
