"""Intel's Unified Runtime (catalogs/unified_runtime): the ur_result_t names SYCL and PyTorch XPU
print for a failed UR call, and the lines UR's loader, sanitizer and adapters log.

Every line in REAL is copied from the public thread named beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from catalogs.unified_runtime.extract import extract
from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_catalog_reads, catalog_hits, decide

FAMILY = "unified_runtime_cat"
RULES = Path(__file__).resolve().parents[2] / "rules"

REAL = [
    (  # github.com/intel/torch-xpu-ops/issues/1598: distributed inductor tests, PyTorch 2.8 XPU
        "RuntimeError: Native API failed. Native API returns: 39"
        " (UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)",
        "device_oom",
    ),
    (  # github.com/ggml-org/llama.cpp/issues/25286: SYCL back end on two Arc Pro B70
        "level_zero backend failed with error: 39 [UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY]",
        "device_oom",
    ),
    (  # github.com/intel/intel-extension-for-pytorch/issues/780: IPEX on Lunar Lake
        "RuntimeError: Native API failed. Native API returns: 20 (UR_RESULT_ERROR_DEVICE_LOST)",
        "gpu_hardware_fault",
    ),
    (  # github.com/pytorch/pytorch/issues/190972: PyTorch XPU on an Arc A770, Windows
        "RuntimeError: level_zero backend failed with error: 40 (UR_RESULT_ERROR_OUT_OF_RESOURCES)",
        "device_oom",
    ),
    (  # github.com/intel/torch-xpu-ops/issues/1498: extended unit tests under WSL
        "RuntimeError: Native API failed. Native API returns: 29"
        " (UR_RESULT_ERROR_INVALID_KERNEL_NAME)",
        "unsupported_gpu_arch",
    ),
    (  # github.com/intel/compute-runtime/issues/818: oneAPI 2025.0 over an older Level Zero loader
        "<LOADER>[INFO]: failed to load adapter 'libur_adapter_level_zero.so.0' with error:"
        " /storage/users/abc/intel/oneapi/compiler/2025.0/lib/libur_adapter_level_zero.so.0:"
        " undefined symbol: zeDeviceGetRootDevice",
        "dependency_error",
    ),
    (  # github.com/argonne-lcf/user-guides/pull/1032: the device sanitizer on Aurora
        "====ERROR: DeviceSanitizer: out-of-bounds-access on Device USM (0xff00fffff4a00280)",
        "illegal_memory_access",
    ),
]


@pytest.mark.parametrize(("line", "failure_class"), REAL)
def test_a_real_line_reads_its_class(matcher: Matcher, line: str, failure_class: str) -> None:
    assert_catalog_reads(matcher, line, FAMILY, failure_class)


def test_the_generic_codes_keep_a_low_prior(matcher: Matcher) -> None:
    # github.com/pytorch/pytorch/issues/190972
    line = (
        "RuntimeError: level_zero backend failed with error: 2147483646 (UR_RESULT_ERROR_UNKNOWN)"
    )
    hits = catalog_hits(matcher, line, FAMILY)
    assert {m.signature.failure_class for m in hits} == {"unknown"}
    assert all(m.signature.confidence <= 0.35 for m in hits)
    for code in ("UR_RESULT_ERROR_INVALID_VALUE", "UR_RESULT_ERROR_INVALID_ARGUMENT"):
        decision = decide("unified_runtime", code, "RESULT", "include/ur_api.h")
        assert decision.failure_class == "unknown"
        assert decision.confidence is not None and decision.confidence <= 0.35
    assert decide("unified_runtime", "UR_RESULT_SUCCESS", "RESULT", "ur_api.h").disposition == (
        "excluded"
    )


def test_level_zero_names_stay_with_ze_result(matcher: Matcher) -> None:
    line = "<LEVEL_ZERO>[ERROR]: Error (ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY) in zeMemAllocDevice"
    assert not catalog_hits(matcher, line, FAMILY)
    assert catalog_hits(matcher, line, "ze_result_cat")


def test_an_unimplemented_query_is_not_a_failure() -> None:
    decision = decide(
        "unified_runtime",
        "Unsupported ParamName in urKernelGetInfo: ParamName={}(0x{})",
        "LEVEL_ZERO:ERROR",
        "source/adapters/level_zero/kernel.cpp",
    )
    assert decision.disposition == "context"


def test_the_extractor_reads_codes_loggers_and_stops(tmp_path: Path) -> None:
    header = tmp_path / "include" / "unified-runtime" / "ur_api.h"
    header.parent.mkdir(parents=True)
    header.write_text(
        "typedef enum ur_result_t {\n"
        "  /// Success\n"
        "  UR_RESULT_SUCCESS = 0,\n"
        "  /// [deprecated-value] No longer used\n"
        "  UR_RESULT_ERROR_INVALID_KERNEL_ARGS [[deprecated]] = 27,\n"
        "  /// Unknown or internal error\n"
        "  UR_RESULT_ERROR_UNKNOWN = 0x7ffffffe,\n"
        "  UR_RESULT_FORCE_UINT32 = 0x7fffffff\n"
        "} ur_result_t;\n"
    )
    adapter = tmp_path / "source" / "adapters" / "level_zero" / "usm.cpp"
    adapter.parent.mkdir(parents=True)
    adapter.write_text(
        "void f() {\n"
        '  UR_LOG(ERR, "urUSMPoolCreate: failed to create UMF provider");\n'
        '  UR_LOG(DEBUG, "pool {} created", p);\n'
        '  logger::error(logger::LegacyMessage("[UR][L0] legacy"), "zeInit failed with {}", r);\n'
        '  die("All memory allocations must be tracked!");\n'
        "}\n"
    )
    loader = tmp_path / "source" / "common" / "linux" / "ur_lib_loader.cpp"
    loader.parent.mkdir(parents=True)
    loader.write_text(
        "void g() {\n"
        "  UR_LOG(INFO, \"failed to load adapter '{}' with error: {}\", name, err);\n"
        '  UR_LOG(INFO, "loaded adapter 0x{} ({})", handle, name);\n'
        "}\n"
    )
    found = [(m.level, m.text, m.function) for m in extract(tmp_path, "0.12")]
    assert found == [
        ("RESULT", "UR_RESULT_SUCCESS", "0"),
        ("RESULT", "UR_RESULT_ERROR_INVALID_KERNEL_ARGS", "27"),
        ("RESULT", "UR_RESULT_ERROR_UNKNOWN", "2147483646"),
        ("LEVEL_ZERO:ERROR", "urUSMPoolCreate: failed to create UMF provider", "f"),
        ("LEVEL_ZERO:ERROR", "zeInit failed with {}", "f"),
        ("DIE", "All memory allocations must be tracked!", "f"),
        ("LOADER:INFO", "failed to load adapter '{}' with error: {}", "g"),
    ]


def test_the_catalog_reads_every_pinned_line() -> None:
    accounting = json.loads((RULES / FAMILY / "CATALOG.json").read_text())
    assert [row["line"] for row in accounting["releases"]] == ["0.10", "0.11", "0.12"]
