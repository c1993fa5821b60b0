"""Level Zero's result codes (catalogs/ze_result: ze_result_t of include/ze_api.h) are read in
whatever wrapper prints them, beside the wrapper's own signature (oneCCL's "ze error at ...").

The first line is copied from the public thread named beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from catalogs.ze_result.extract import extract, meanings
from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_catalog_reads, catalog_hits, decide

FAMILY = "ze_result_cat"
RULES = Path(__file__).resolve().parents[2] / "rules"

# github.com/intel/intel-extension-for-pytorch/issues/640: reduce_scatter_tensor over oneCCL
REAL = (
    "2024:05:29-19:16:18:(202165) |CCL_ERROR| worker.cpp:338 ccl_worker_func: worker 0 caught"
    " internal exception: oneCCL: ze_call.cpp:28 do_call: EXCEPTION: ze error at"
    " zeCommandQueueExecuteCommandLists, code: ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY"
)


def test_the_real_oneccl_line_reads_its_code(matcher: Matcher) -> None:
    assert_catalog_reads(matcher, REAL, FAMILY, "device_oom")
    # oneCCL's own signature for the wrapper still matches the line beside it
    assert catalog_hits(matcher, REAL, "oneccl_cat")


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        (
            "oneCCL: ze_call.cpp:28 do_call: EXCEPTION: ze error at zeMemOpenIpcHandle, code:"
            " ZE_RESULT_ERROR_DEVICE_LOST",
            "gpu_hardware_fault",
        ),
        (
            "oneCCL: ze_call.cpp:28 do_call: EXCEPTION: ze error at zeMemOpenIpcHandle, code:"
            " ZE_RESULT_ERROR_INVALID_ARGUMENT",
            "unknown",
        ),
    ],
)
def test_a_code_in_any_wrapper_gets_its_class(
    matcher: Matcher, text: str, failure_class: str
) -> None:
    assert_catalog_reads(matcher, text, FAMILY, failure_class)


def test_the_validation_codes_keep_a_low_prior() -> None:
    decision = decide("ze_result", "ZE_RESULT_ERROR_INVALID_ARGUMENT", "RESULT", "ze_api.h")
    assert decision.failure_class == "unknown"
    assert decision.confidence is not None and decision.confidence <= 0.35
    assert decide("ze_result", "ZE_RESULT_SUCCESS", "RESULT", "ze_api.h").disposition == (
        "excluded"
    )


def test_the_extractor_reads_the_enum_and_its_comments(tmp_path: Path) -> None:
    header = tmp_path / "include" / "ze_api.h"
    header.parent.mkdir()
    header.write_text(
        "#define ZE_RESULT_OUTSIDE 1\n"
        "typedef enum _ze_result_t\n"
        "{\n"
        "    ZE_RESULT_SUCCESS = 0,  ///< [Core] success\n"
        "    ZE_RESULT_ERROR_UNSUPPORTED_SIZE = 0x78000009,  ///< [Validation] size argument is"
        " not supported by the device (e.g., too\n"
        "                                                   ///< large)\n"
        "    ZE_RESULT_FORCE_UINT32 = 0x7fffffff\n"
        "\n"
        "} ze_result_t;\n"
    )
    found = [(m.text, m.line, m.level) for m in extract(tmp_path, "1.32")]
    assert found == [
        ("ZE_RESULT_SUCCESS", 4, "RESULT"),
        ("ZE_RESULT_ERROR_UNSUPPORTED_SIZE", 5, "RESULT"),
    ]
    assert meanings(tmp_path)["ZE_RESULT_ERROR_UNSUPPORTED_SIZE"] == (
        "[Validation] size argument is not supported by the device (e.g., too large)"
    )


def test_the_catalog_reads_every_pinned_tag() -> None:
    accounting = json.loads((RULES / FAMILY / "CATALOG.json").read_text())
    assert [row["line"] for row in accounting["releases"]] == ["1.9", "1.20", "1.32"]
