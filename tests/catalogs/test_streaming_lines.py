"""Real lines MosaicML Streaming printed in failed runs meet the signatures generated from its
source (catalogs/streaming), its reviewed mapping decides messages as a reviewer would, and its
extractor reads the shapes the shared Python reader does not (the caller's text of a wait that
timed out, a message held in a module-level constant).

Every real line in the first test is copied from the public thread named beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from catalogs.streaming.extract import extract
from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_catalog_reads, assert_mapped, catalog_hits, decide

FAMILY = "streaming_cat"
RULES = Path(__file__).resolve().parents[2] / "rules"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/mosaicml/streaming/issues/567: StreamingCOCO over a pickle column
        (
            "ValueError: Column bbox_labels contains an unsafe type: pkl. To proceed anyway, set"
            " ``allow_unsafe_types=True``.",
            "framework_config_error",
        ),
        # github.com/mosaicml/streaming/issues/399: a shard shorter than its header says
        (
            "IndexError: Relative sample index 85 is not present in the 17/shard.00085.mds file.",
            "corrupt_or_missing_data",
        ),
        # github.com/mosaicml/streaming/issues/677: the same, printed by a torchrun rank
        (
            "[rank5]: IndexError: Relative sample index 5205 is not present in the"
            " shard.01000.mds file.",
            "corrupt_or_missing_data",
        ),
    ],
)
def test_a_real_streaming_line_gets_its_class(
    matcher: Matcher, text: str, failure_class: str
) -> None:
    assert_catalog_reads(matcher, text, FAMILY, failure_class)


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # 0.13: two datasets (or a dead run's registration) on one local cache directory
        (
            "ValueError: Reused local directory: ['/tmp/streaming/train'] vs"
            " ['/tmp/streaming/train']. Provide a different one. If using a unique local"
            " directory, try deleting the local directory and call"
            " `streaming.base.util.clean_stale_shared_memory()` only once in your script to clean"
            " up the stale shared memory before instantiation of `StreamingDataset`.",
            "framework_config_error",
        ),
        # 0.13: a dataset read in place from the wrong directory
        (
            "RuntimeError: No `remote` provided, but local file /data/mds/train/index.json does"
            " not exist either",
            "corrupt_or_missing_data",
        ),
        # 0.13: a non-leader rank that waited for its node's index.json
        (
            "RuntimeError: Index file s3://bucket/mds/train/index.json -> /tmp/mds/train/index.json"
            " took too long to download or failed to download. Either increase the"
            " `download_timeout` value or check the local rank 0 traceback.60.000 < 60.118 secs.",
            "corrupt_or_missing_data",
        ),
    ],
)
def test_a_line_rendered_from_the_source_gets_its_class(
    matcher: Matcher, text: str, failure_class: str
) -> None:
    assert_catalog_reads(matcher, text, FAMILY, failure_class)


@pytest.mark.parametrize(
    "text",
    [
        # StreamingDataset's defaults, logged at every start
        "2025-05-10 16:00:15,152: rank0[822018][MainThread]: WARNING: streaming.base.dataset:"
        " Because `predownload` was not specified, it will default to 8*batch_size if batch_size"
        " is not None, otherwise 64.",
        "/usr/lib/python3.10/site-packages/streaming/base/dataset.py:412: UserWarning:"
        " predownload < batch_size (8 < 16).This may result in slower batch time. Recommendation"
        " is to set predownload to at-least batch_size.",
    ],
)
def test_a_healthy_or_informational_line_is_not_matched(matcher: Matcher, text: str) -> None:
    assert not catalog_hits(matcher, text, FAMILY)


@pytest.mark.parametrize(
    ("text", "level", "file", "failure_class"),
    [
        (
            "Cache limit ({self.cache_limit} bytes) is too low. Increase the `cache_limit` to"
            " at-least four times the largest shard size",
            "ValueError",
            "streaming/base/dataset.py",
            "framework_config_error",
        ),
        (
            "Internal error: shared memory prefix={prefix_int} was not registered by local leader."
            " This may be because you specified different ``local`` parameters from different"
            " ranks.",
            "RuntimeError",
            "streaming/base/shared/prefix.py",
            "framework_config_error",
        ),
        (
            "Either set the environment variables `GCS_KEY` and `GCS_SECRET` or use any of the"
            " methods in https://cloud.google.com/docs/authentication/external/set-up-adc",
            "ValueError",
            "streaming/base/storage/download.py",
            "filesystem_permission",
        ),
        (
            "Object {remote} not found.",
            "FileNotFoundError",
            "streaming/base/storage/download.py",
            "corrupt_or_missing_data",
        ),
        (
            "Resuming further into the dataset ({drop_first}) than it has samples ({num_samples})",
            "ValueError",
            "streaming/base/partition/orig.py",
            "checkpoint_mismatch",
        ),
        (
            "Wrong shape: expected {self.shape}, got {obj.shape}.",
            "ValueError",
            "streaming/base/format/mds/encodings.py",
            "data_preprocessing_error",
        ),
    ],
)
def test_the_mapping_gives_a_mechanism_its_class(
    text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped("streaming", text, level, file, failure_class)


def test_warnings_that_carry_on_are_context() -> None:
    for text in (
        "Trying to partition {num_samples} samples over {num_canonical_nodes} canonical nodes."
        " This will result in many samples being repeated",
        "Directory {local} exists and is not empty; exist_ok is set to True so will remove"
        " contents.",
    ):
        decision = decide("streaming", text, "WARNING", "streaming/base/partition/orig.py")
        assert decision.disposition == "context", text


def test_the_low_default_stays_low() -> None:
    decision = decide("streaming", "Negative cache usage: {self.cache_usage}.", "RuntimeError", "x")
    assert decision.disposition == "mapped"
    assert decision.rule == "default"
    assert decision.confidence is not None and decision.confidence <= 0.35


def test_the_extractor_reads_each_way_streaming_reports(tmp_path: Path) -> None:
    base = tmp_path / "streaming" / "base"
    base.mkdir(parents=True)
    (base / "stream.py").write_text(
        "import warnings\n"
        "GCS_ERROR = 'Either set the environment variables `GCS_KEY` and `GCS_SECRET`.'\n"
        "def get_shards(self, filename):\n"
        "    if not self.remote:\n"
        "        raise RuntimeError(f'No `remote` provided, but local file {filename} does not"
        " exist either')\n"
        "    wait_for_file_to_exist(filename, TICK, self.download_timeout,\n"
        "                           f'Index file {filename} took too long to download. ' +\n"
        "                           'Either increase the `download_timeout` value.')\n"
        "    logger.warning(f'Trying to partition {n} samples')\n"
        "    warnings.warn('Shuffle block size was smaller than shard size')\n"
        "    logger.info('Because `predownload` was not specified, it will default')\n"
        "    raise ValueError(GCS_ERROR)\n"
    )
    convert = tmp_path / "streaming" / "text" / "convert"
    convert.mkdir(parents=True)
    (convert / "c4.py").write_text("raise ValueError('an offline conversion script')\n")
    found = {(m.level, m.text, m.style) for m in extract(tmp_path, "0.13")}
    assert found == {
        (
            "RuntimeError",
            "No `remote` provided, but local file {filename} does not exist either",
            "fstring",
        ),
        (
            "RuntimeError",
            "Index file {filename} took too long to download. Either increase the"
            " `download_timeout` value.{timeout:.3f} < {dt:.3f} secs.",
            "fstring",
        ),
        ("WARNING", "Trying to partition {n} samples", "fstring"),
        ("WARNING", "Shuffle block size was smaller than shard size", "literal"),
        (
            "ValueError",
            "Either set the environment variables `GCS_KEY` and `GCS_SECRET`.",
            "literal",
        ),
    }


def test_the_catalog_reads_every_pinned_ref() -> None:
    accounting = json.loads((RULES / FAMILY / "CATALOG.json").read_text())
    assert [row["line"] for row in accounting["releases"]] == ["0.7", "0.9", "0.13"]
    assert all(row["found"] > 0 and row["signatures"] > 0 for row in accounting["releases"])
