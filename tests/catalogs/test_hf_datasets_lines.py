"""Real lines Hugging Face datasets printed in failed runs meet the signatures generated from its
source (catalogs/hf_datasets), its reviewed mapping decides messages as a reviewer would, and its
extractor reads the exception an exception class's classmethod builds for its caller to raise.

Every real line below is copied from the public thread named beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from catalogs.hf_datasets.extract import extract
from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_catalog_reads, assert_mapped, catalog_hits, decide

FAMILY = "hf_datasets_cat"
RULES = Path(__file__).resolve().parents[2] / "rules"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/hiyouga/ChatGLM-Efficient-Tuning/issues/374: the generation wrapper (2.x)
        (
            "datasets.builder.DatasetGenerationError: An error occurred while generating the"
            " dataset",
            "corrupt_or_missing_data",
        ),
        # github.com/scicode-bench/SciCode/issues/40: data files whose columns differ
        (
            "Please either edit the data files to have matching columns, or separate them into"
            " different configurations (see docs at"
            " https://hf.co/docs/hub/datasets-manual-configuration#multiple-configurations)",
            "data_preprocessing_error",
        ),
        # github.com/ZihanZhaoSJTU/LibriSQA/issues/2: the cast under it
        ("because column names don't match", "data_preprocessing_error"),
        # github.com/Lightning-AI/litgpt/pull/2095: datasets 4+ refusing a loading script
        (
            "RuntimeError: Dataset scripts are no longer supported, but found logiqa.py",
            "dependency_error",
        ),
    ],
)
def test_a_real_datasets_line_gets_its_class(
    matcher: Matcher, text: str, failure_class: str
) -> None:
    assert_catalog_reads(matcher, text, FAMILY, failure_class)


@pytest.mark.parametrize(
    ("text", "level", "file", "failure_class"),
    [
        # 5.0.1 src/datasets/load.py: a gated dataset without a token
        (
            "Dataset '{path}' is a gated dataset on the Hub. You must be authenticated to access"
            " it.",
            "DatasetNotFoundError",
            "src/datasets/load.py",
            "filesystem_permission",
        ),
        # 5.0.1 src/datasets/load.py: the Hub unreachable for a dataset not cached
        (
            "Couldn't reach '{path}' on the Hub ({e.__class__.__name__})",
            "ConnectionError",
            "src/datasets/load.py",
            "corrupt_or_missing_data",
        ),
        # 5.0.1 src/datasets/builder.py: the cache's free-space check
        (
            "Not enough disk space. Needed: {size_str(self.info.size_in_bytes or 0)}",
            "OSError",
            "src/datasets/builder.py",
            "disk_full",
        ),
        # 5.0.1 src/datasets/builder.py: a config the dataset does not define
        (
            "BuilderConfig '{config_name}' not found. Available:"
            " {list(self.builder_configs.keys())}",
            "ValueError",
            "src/datasets/builder.py",
            "framework_config_error",
        ),
        # 5.0.1 src/datasets/arrow_dataset.py: a map function naming a column the data lacks
        (
            "Column to remove {list(missing_columns)} not in the dataset. Current columns in the"
            " dataset: {self._data.column_names}",
            "ValueError",
            "src/datasets/arrow_dataset.py",
            "data_preprocessing_error",
        ),
        # 2.19.2 src/datasets/load.py: a loading script run without trust_remote_code=True
        (
            "Loading this dataset requires you to execute custom code contained in the dataset"
            " repository on your local machine. Please set the option `trust_remote_code=True` to"
            " permit loading of this dataset.",
            "ValueError",
            "src/datasets/load.py",
            "framework_config_error",
        ),
        # 2.19.2 src/datasets/metric.py: processes of a distributed metric not sharing cache_dir
        (
            "Expected to find locked file {expected_lock_file_name} from process"
            " {self.process_id} but it doesn't exist.",
            "ValueError",
            "src/datasets/metric.py",
            "framework_config_error",
        ),
    ],
)
def test_the_mapping_gives_a_mechanism_its_class(
    text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped("hf_datasets", text, level, file, failure_class)


def test_streaming_retries_and_fingerprint_notes_stay_context() -> None:
    for text in (
        "Got disconnected from remote data host. Retrying in {config.STREAMING_READ_RETRY_INTERVAL}"
        "sec [{retry}/{max_retries}]",
        "Parameter '{key}'={transform_args[key]} of the transform {transform} couldn't be hashed"
        " properly, a random hash was used instead.",
    ):
        assert decide(
            "hf_datasets", text, "WARNING", "src/datasets/utils/file_utils.py"
        ).disposition == ("context")


def test_a_healthy_loading_line_is_not_matched(matcher: Matcher) -> None:
    for line in (
        "Generating train split: 1000 examples [00:00, 8811.51 examples/s]",
        "Map (num_proc=8): 100%|██████████| 52002/52002 [00:04<00:00, 12254.36 examples/s]",
        "Downloading data: 100%|██████████| 21.0M/21.0M [00:01<00:00, 15.2MB/s]",
    ):
        assert not catalog_hits(matcher, line, FAMILY)


def test_the_extractor_reads_an_exception_built_by_its_classmethod(tmp_path: Path) -> None:
    package = tmp_path / "src" / "datasets"
    package.mkdir(parents=True)
    (package / "exceptions.py").write_text(
        "class DatasetGenerationCastError(DatasetGenerationError):\n"
        "    @classmethod\n"
        "    def from_cast_error(cls, cast_error, builder_name):\n"
        "        explanation_message = (\n"
        '            f"\\n\\nAll the data files must have the same columns, but {cast_error}"\n'
        "        )\n"
        '        explanation_message += f"\\n\\nThis happened in the {builder_name} builder"\n'
        '        text = "An error occurred while generating the dataset"\n'
        "        return cls(text + explanation_message)\n"
        "class Helper:\n"
        "    @classmethod\n"
        "    def make(cls):\n"
        '        return cls("not an exception class: not read")\n'
    )
    found = {(m.level, m.text, m.style) for m in extract(tmp_path, "5.0")}
    assert found == {
        (
            "DatasetGenerationCastError",
            "An error occurred while generating the dataset\n\nAll the data files must have the"
            " same columns, but {cast_error}\n\nThis happened in the {builder_name} builder",
            "fstring",
        )
    }


def test_the_catalog_reads_the_release_lines() -> None:
    accounting = json.loads((RULES / FAMILY / "CATALOG.json").read_text())
    assert [row["line"] for row in accounting["releases"]] == ["2.19", "3.6", "5.0"]
    assert all(row["found"] > 0 for row in accounting["releases"])
