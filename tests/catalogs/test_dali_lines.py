"""Real lines NVIDIA DALI printed in failed runs meet the signatures generated from its wheels
(catalogs/dali), and its reviewed mapping decides messages as a reviewer would.

Every log line below is copied from the public thread named beside it; the mapping cases are
texts from the named release's wheel.
"""

from __future__ import annotations

import pytest

from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_mapped, catalog_hits

FAMILY = "dali_cat"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/NVIDIA/DALI/issues/2836: the mixed image decoder's allocation failed
        # inside a running pipeline (DALI 0.30)
        ("CUDA allocation failed", "device_oom"),
        # github.com/NVIDIA/DALI/issues/2525: the same in a CPU decoder's thread
        ("Error in thread 3: CUDA allocation failed", "device_oom"),
        # github.com/NVIDIA/DALI/issues/510: a reader's shard_id at or above num_shards
        (
            "RuntimeError: Critical error in pipeline: [/opt/dali/dali/pipeline/operators/"
            'reader/loader/loader.h:57] Assert on "num_shards_ > shard_id_" failed: num_shards'
            " needs to be greater than shard_id",
            "launch_config_error",
        ),
        # github.com/NVIDIA/DALI/issues/6149: the report around an operator's error (1.51.2)
        ("Current pipeline object is no longer valid.", "data_preprocessing_error"),
        # github.com/NVIDIA/DALI/issues/2525: the report's first line
        ("RuntimeError: Critical error in pipeline:", "data_preprocessing_error"),
    ],
)
def test_a_real_dali_line_gets_its_class(matcher: Matcher, text: str, failure_class: str) -> None:
    found = matcher.scan_text(text, keep_all=True)
    assert any(m.signature.family == FAMILY for m in found), f"no {FAMILY} signature matched"
    assert failure_class in {m.signature.failure_class for m in found}


def test_the_pipeline_report_is_a_symptom_the_operator_s_error_outranks(matcher: Matcher) -> None:
    # github.com/NVIDIA/DALI/issues/2836: the report's lines around the decoder's error
    report = catalog_hits(matcher, "Current pipeline object is no longer valid.", FAMILY)
    assert {m.signature.role.value for m in report} == {"symptom"}
    cause = matcher.scan_text("CUDA allocation failed")
    assert cause and cause[0].signature.failure_class == "device_oom"
    assert cause[0].signature.confidence > max(m.signature.confidence for m in report)


@pytest.mark.parametrize(
    ("text", "file", "failure_class"),
    [
        # 2.4 dali/operators/reader/loader/loader.h: the data holds fewer samples than shards
        (
            ", needs to be at least equal to the requested number of shards:",
            "dali/operators/reader/loader/loader.h",
            "launch_config_error",
        ),
        # 2.4 dali/operators/reader/loader/coco_loader.cc
        (
            'Could not open JSON annotations file: "',
            "dali/operators/reader/loader/coco_loader.cc",
            "corrupt_or_missing_data",
        ),
        # 1.35 dali/operators/reader/loader/recordio_loader.h
        (
            "Incomplete or corrupted record files",
            "dali/operators/reader/loader/recordio_loader.h",
            "corrupt_or_missing_data",
        ),
        # 2.4 dali/pipeline/pipeline.cc
        (
            "The pipeline requires a CUDA-capable GPU but the CUDA driver is not installed or"
            " its version is insufficient.",
            "dali/pipeline/pipeline.cc",
            "cuda_driver_mismatch",
        ),
    ],
)
def test_the_mapping_decides_dali_s_checks(text: str, file: str, failure_class: str) -> None:
    assert_mapped("dali", text, "FRAGMENT", file, failure_class)


@pytest.mark.parametrize(
    ("text", "level", "failure_class"),
    [
        # 2.4 nvidia/dali/_multiproc/pool.py: a worker of the parallel external source
        ("Workers initialization failed", "RuntimeError", "dataloader_worker_died"),
        # 2.4 nvidia/dali/_multiproc/shared_batch.py
        (
            "Could not put message into shared memory region, not enough space in the buffer.",
            "RuntimeError",
            "shm_exhausted",
        ),
    ],
)
def test_the_mapping_decides_dali_s_python(text: str, level: str, failure_class: str) -> None:
    assert_mapped("dali", text, level, "nvidia/dali/_multiproc/pool.py", failure_class)
