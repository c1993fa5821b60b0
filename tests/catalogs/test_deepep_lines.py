"""Real lines DeepEP printed in failed runs meet the signatures generated from its source
(catalogs/deepep), and its reviewed mapping decides messages as a reviewer would.

Every line in the first test is copied from the public thread named beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from catalogs.deepep.extract import extract
from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_catalog_reads, assert_mapped, catalog_hits, decide

FAMILY = "deepep_cat"
RULES = Path(__file__).resolve().parents[2] / "rules"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/deepseek-ai/DeepEP/pull/181: 2 nodes over RoCE, the normal kernels' dispatch
        # waited for the other node (concurrent submissions to one QP)
        (
            "DeepEP dispatch NVL receiver timeout, channel: 10, RDMA: 0, nvl: 7, src RDMA: 1,"
            " src nvl: 1, start: 0, end: 0",
            "collective_timeout",
        ),
        (
            "DeepEP dispatch forwarder timeout (RDMA meta), channel: 0, RDMA: 0, nvl: 7, src RDMA"
            " lane: 1, dst NVL: 1, meta: 0, 0, 0, 0",
            "collective_timeout",
        ),
        # github.com/deepseek-ai/DeepEP/issues/424: one rank still compiling DeepGEMM kernels
        ("RuntimeError: DeepEP error: timeout (dispatch CPU)", "collective_timeout"),
        # github.com/pytorch/torchtitan/issues/2242: a dispatch input that was not 2-D contiguous
        (
            "Failed: Assertion error /opt/DeepEP/csrc/deep_ep.cpp:510 'x.dim() == 2 and"
            " x.is_contiguous()'",
            "shape_or_dtype_error",
        ),
        # github.com/sgl-project/sglang/issues/6017: more channels than NVSHMEM IBGDA QPs
        (
            "Assertion failed: /sgl-workspace/DeepEP/csrc/kernels/internode.cu:483, condition:"
            " ibgda_get_state()->num_rc_per_pe >= num_channels",
            "framework_config_error",
        ),
        # github.com/deepseek-ai/DeepEP/issues/125: the intranode test started on two nodes; an
        # internal argument check, kept at the low default
        (
            "RuntimeError: Failed: Assertion error /***/csrc/deep_ep.cpp:629"
            " 'num_tokens_per_rdma_rank.has_value()'",
            "unknown",
        ),
    ],
)
def test_a_real_deepep_line_gets_its_class(matcher: Matcher, text: str, failure_class: str) -> None:
    assert_catalog_reads(matcher, text, FAMILY, failure_class)


def test_the_2026_assertion_prefix_reads_the_same_condition(matcher: Matcher) -> None:
    # DeepEP 2.x's EPException prints "<name> exception (<file>:<line>): <cond>"
    text = (
        "RuntimeError: Assertion exception (/usr/local/lib/python3.12/site-packages/deep_ep/"
        "csrc/legacy/buffer.hpp:512): x.dim() == 2 and x.is_contiguous()"
    )
    assert_catalog_reads(matcher, text, FAMILY, "shape_or_dtype_error")


def test_a_bare_condition_is_not_read_as_deepep(matcher: Matcher) -> None:
    # a condition is DeepEP's only after the prefix its assertion macros print
    assert not catalog_hits(matcher, "x.dim() == 2 and x.is_contiguous()", FAMILY)
    assert not catalog_hits(matcher, "    assert topk_idx.dim() == 2", FAMILY)


@pytest.mark.parametrize(
    ("text", "level", "file", "failure_class"),
    [
        (
            'false and "NVSHMEM is disabled during compilation"',
            "HOST_ASSERT",
            "csrc/deep_ep.cpp",
            "dependency_error",
        ),
        (
            "Unsupported number of EP ranks: {num_ranks}",
            "AssertionError",
            "deep_ep/buffer.py",
            "framework_config_error",
        ),
        (
            "num_nvl_bytes < std::numeric_limits<int>::max()",
            "HOST_ASSERT",
            "csrc/deep_ep.cpp",
            "framework_config_error",
        ),
        (
            "DeepEP timeout for combine receivers, rank %d, responsible_channel = %d, expect = %d",
            "PRINTF",
            "csrc/kernels/intranode.cu",
            "collective_timeout",
        ),
        (
            "DeepEP error: CPU recv timeout",
            "RuntimeError",
            "csrc/deep_ep.cpp",
            "collective_timeout",
        ),
        (
            'false and "Unsupported hidden"',
            "HOST_ASSERT",
            "csrc/kernels/launch.cuh",
            "framework_config_error",
        ),
        (
            "(topk_idx == nullptr) == (topk_weights == nullptr)",
            "DEVICE_ASSERT",
            "csrc/kernels/internode.cu",
            "device_side_assert",
        ),
    ],
)
def test_the_mapping_gives_a_mechanism_its_class(
    text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped("deepep", text, level, file, failure_class)


def test_informational_and_generic_messages_get_no_signature() -> None:
    counters = decide("deepep", "Global rank: %d, num_recv_tokens: %d", "PRINTF", "csrc/x.cpp")
    assert counters.disposition == "context"
    short = decide("deepep", "Invalid hidden", "STATIC_ASSERT", "csrc/kernels/internode.cu")
    assert short.disposition == "excluded"


def test_the_low_default_stays_low() -> None:
    decision = decide("deepep", "not destroyed", "HOST_ASSERT", "csrc/deep_ep.cpp")
    assert decision.disposition == "mapped"
    assert decision.failure_class == "unknown"
    assert decision.confidence is not None and decision.confidence <= 0.35


def test_the_extractor_reads_each_way_deepep_reports(tmp_path: Path) -> None:
    kernels = tmp_path / "csrc" / "kernels"
    kernels.mkdir(parents=True)
    (kernels / "exception.cuh").write_text(
        "class EPException: public std::exception {\n"
        "    explicit EPException(const char *name, const char* file, const int line,"
        " const std::string& error) {\n"
        '        message = std::string("Failed: ") + name + " error " + file + ":" +'
        ' std::to_string(line) + " \'" + error + "\'";\n'
        "    }\n"
        "};\n"
        "#define CUDA_CHECK(cmd) \\\n"
        "do { \\\n"
        "    cudaError_t e = (cmd); \\\n"
        "    if (e != cudaSuccess) { \\\n"
        '        throw EPException("CUDA", __FILE__, __LINE__, cudaGetErrorString(e)); \\\n'
        "    } \\\n"
        "} while (0)\n"
        "#define EP_DEVICE_ASSERT(cond) \\\n"
        'do { if (not (cond)) { printf("Assertion failed: %s:%d, condition: %s\\n",'
        ' __FILE__, __LINE__, #cond); asm("trap;"); } } while (0)\n'
    )
    (kernels / "intranode.cu").write_text(
        "__global__ void dispatch(int rank) {\n"
        "    EP_DEVICE_ASSERT(num_topk <= 32);\n"
        '    EP_STATIC_ASSERT(kNumRanks <= 32, "Too many ranks");\n'
        '    EP_STATIC_ASSERT(kNumRanks > 1, "");\n'
        '    printf("DeepEP timeout for dispatch senders, rank %d, responsible_channel = %d\\n",'
        " rank, 0);\n"
        "}\n"
    )
    (kernels / "launch.cuh").write_text(
        "#define SWITCH_HIDDEN(case_macro) \\\n"
        "    switch (hidden) { \\\n"
        "        case 7168: case_macro(7168); \\\n"
        '        default: EP_HOST_ASSERT(false and "Unsupported hidden"); \\\n'
        "    } while (false)\n"
    )
    (tmp_path / "csrc" / "deep_ep.cpp").write_text(
        "void Buffer::sync() {\n"
        "    EP_HOST_ASSERT(x.dim() == 2   and\n"
        "                   x.is_contiguous());  // stringized with its spaces folded\n"
        '    throw std::runtime_error("DeepEP error: CPU recv timeout");\n'
        "}\n"
    )
    found = {(m.level, m.text, m.style) for m in extract(tmp_path, "1.2.1")}
    assert found == {
        ("EXCEPTION", "Failed: CUDA error {}:{:d} '{}'", "brace"),
        ("DEVICE_ASSERT", "num_topk <= 32", "literal"),
        ("STATIC_ASSERT", "Too many ranks", "literal"),
        (
            "PRINTF",
            "DeepEP timeout for dispatch senders, rank %d, responsible_channel = %d",
            "printf",
        ),
        ("HOST_ASSERT", "x.dim() == 2 and x.is_contiguous()", "literal"),
        ("HOST_ASSERT", 'false and "Unsupported hidden"', "literal"),
        ("RuntimeError", "DeepEP error: CPU recv timeout", "literal"),
    }


def test_the_catalog_reads_every_pinned_ref() -> None:
    accounting = json.loads((RULES / FAMILY / "CATALOG.json").read_text())
    read = [row["line"] for row in accounting["releases"]]
    assert read == ["1.0", "1.1", "1.2.1", "2.1"]
    assert all(row["found"] > 0 and row["signatures"] > 0 for row in accounting["releases"])
