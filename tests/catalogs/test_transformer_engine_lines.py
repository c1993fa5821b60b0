"""Real lines NVIDIA Transformer Engine printed in failed runs meet the signatures generated from
its source (catalogs/transformer_engine), and its reviewed mapping decides messages as a reviewer
would.

Every line below is copied from the public thread named beside it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from catalogs.transformer_engine.extract import extract
from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_mapped, catalog_hits, decide

FAMILY = "transformer_engine_cat"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/NVIDIA/TransformerEngine/issues/2258 (TE 2.8, torch 2.6+cu124, H100): the
        # driver lacks an entry point of the CUDA TE was built with
        (
            "RuntimeError: /TransformerEngine/transformer_engine/common/util/cuda_driver.cpp:42 in"
            " function get_symbol: Assertion failed: driver_result =="
            " cudaDriverEntryPointSuccess. Could not find CUDA driver entry point for"
            " cuCtxGetCurrent when instantiating TERowParallelLinear when instantiating"
            " SelfAttention",
            "cuda_driver_mismatch",
        ),
        # github.com/NVIDIA-NeMo/Speech/issues/11929 (NeMo 2.0 from pip, cuDNN < 9): cudnn-frontend
        # refused the fused-attention graph
        (
            "RuntimeError: /home/TransformerEngine/transformer_engine/common/fused_attn/"
            "fused_attn_f16_arbitrary_seqlen.cu:330 in function operator(): cuDNN Error:"
            " [cudnn_frontend] Error: No execution plans support the graph.Can't retrieve"
            " backend error messages for CUDNN version < 9.0. For more information, enable cuDNN"
            " error logging by setting CUDNN_LOGERR_DBG=1 and CUDNN_LOGDEST_DBG=stderr in the"
            " environment.",
            "framework_config_error",
        ),
        # github.com/NVIDIA/TransformerEngine/issues/651 (TE 1.2.1 on H100, older than the pinned
        # lines: the check's wording is the same)
        (
            "/fsx/sbuasai/test_te/deps/TransformerEngine/transformer_engine/common/fused_attn/"
            "fused_attn_f16_arbitrary_seqlen.cu:227 in function operator(): cuDNN Error:"
            " [cudnn_frontend] Error: No execution plans built successfully.. For more"
            " information, enable cuDNN error logging by setting CUDNN_LOGERR_DBG=1 and"
            " CUDNN_LOGDEST_DBG=stderr in the environment.",
            "framework_config_error",
        ),
        # github.com/NVIDIA/TransformerEngine/issues/1821 (TE 2.3, DeepSeek-V3 MLA on A100)
        (
            "ValueError: No dot product attention backend is available for the provided inputs."
            " Please run with NVTE_DEBUG=1 NVTE_DEBUG_LEVEL=2 to find out the reasons for"
            " disabling all backends.",
            "framework_config_error",
        ),
    ],
)
def test_a_real_transformer_engine_line_gets_its_class(
    matcher: Matcher, text: str, failure_class: str
) -> None:
    hits = catalog_hits(matcher, text, FAMILY)
    assert hits, f"no {FAMILY} signature matched"
    assert failure_class in {m.signature.failure_class for m in hits}


def test_the_fp8_compute_capability_check_stays_with_its_hand_written_signature(
    matcher: Matcher,
) -> None:
    # github.com/NVIDIA/TransformerEngine/issues/1159 (an RTX 3090): fp8.py returns the reason and
    # asserts on it, so the catalog has no text of its own; gpu.compute_capability_required reads it
    text = "AssertionError: Device compute capability 8.9 or higher required for FP8 execution."
    classes = {m.signature.failure_class for m in matcher.scan_text(text)}
    assert "unsupported_gpu_arch" in classes


@pytest.mark.parametrize(
    ("text", "level", "file", "failure_class"),
    [
        # v2.8 common/comm_gemm_overlap/userbuffers/userbuffers.cu: a userbuffers kernel's
        # UB_TIMEOUT wait for a peer GPU's flag
        (
            "[%d] Reduce-scatter: SM %d [%d]: expecting %d got %d",
            "UB",
            "transformer_engine/common/comm_gemm_overlap/userbuffers/userbuffers.cu",
            "collective_timeout",
        ),
        # v2.8 pytorch/module/base.py: no CUDA multicast for the comm+GEMM overlap
        (
            "CUDA device, driver and/or toolkit version does not support comm+GEMM overlap with"
            " CUDA Multicast. Launch app with UB_SKIPMC=1 to try CUDA IPC instead.",
            "RuntimeError",
            "transformer_engine/pytorch/module/base.py",
            "cuda_driver_mismatch",
        ),
        # v2.8 common/gemm/cublaslt_gemm.cu: a run-time cuBLAS older than the recipe needs
        (
            "transformer_engine::cuda::cublas_version() >= 120800. MXFP8 requires cuBLAS 12.8+,"
            " but run-time cuBLAS version is {}",
            "CHECK",
            "transformer_engine/common/gemm/cublaslt_gemm.cu",
            "cuda_driver_mismatch",
        ),
        # v2.18 common/fused_router/utils.h: the GPU's on-chip shared memory, not /dev/shm
        (
            "shared_memory_size <= static_cast<size_t>(max_smem_per_block). Shared memory size"
            " ({} bytes) exceeds device capacity ({} bytes). Try reducing num_experts"
            " (currently {}).",
            "CHECK",
            "transformer_engine/common/fused_router/utils.h",
            "framework_config_error",
        ),
        # v2.18 common/__init__.py: the pip meta package without the PyTorch extension
        (
            "Found empty `transformer-engine` meta package installed. Install"
            " `transformer-engine` with framework extensions via'pip3 install"
            " --no-build-isolation transformer-engine[pytorch,jax]==VERSION' or 'pip3 install"
            " transformer-engine[core]` for the TE core lib only. The `core_cu12` or `core_cu13`"
            " extra deps can be used to specify CUDA version for the TE core lib.",
            "RuntimeError",
            "transformer_engine/common/__init__.py",
            "dependency_error",
        ),
    ],
)
def test_the_mapping_gives_a_mechanism_its_class(
    text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped("transformer_engine", text, level, file, failure_class)


@pytest.mark.parametrize(
    ("text", "level"),
    [
        # v2.8 userbuffers-host.cpp: rank 0's set-up print, and the NVTE_UBDEBUG notice
        ("MC initialized succesfully, window size = %ld", "PRINT"),
        (
            "TransformerEngine does not support multi-node NVLINK since it was not built with"
            " CUDA version >= 12.4.",
            "PRINT",
        ),
    ],
)
def test_userbuffers_progress_prints_are_context(text: str, level: str) -> None:
    file = "transformer_engine/common/comm_gemm_overlap/userbuffers/userbuffers-host.cpp"
    assert decide("transformer_engine", text, level, file).disposition == "context"


def test_a_check_with_only_its_condition_is_a_low_prior_symptom() -> None:
    # v1.13 pytorch/csrc/extensions/attention.cu: an internal invariant, NVTE_CHECK(cond) alone
    text = "lse_per_step.size(2) == total_tokens / 2."
    decision = decide("transformer_engine", text, "CHECK", "x.cu")
    assert decision.disposition == "mapped"
    assert decision.confidence is not None and decision.confidence <= 0.35
    assert str(decision.role) == "symptom"


def test_the_extractor_reads_a_check_as_the_preprocessor_prints_it(tmp_path: Path) -> None:
    source = tmp_path / "transformer_engine" / "common" / "gemm" / "x.cu"
    source.parent.mkdir(parents=True)
    source.write_text(
        "void f() {\n"
        "  NVTE_CHECK(status  !=\n      CUBLAS_STATUS_NOT_SUPPORTED,\n"
        '             "Unable to find suitable cuBLAS GEMM algorithm");\n'
        '  NVTE_CHECK(a.dim() == 2, "Expected ", a.dim(), " dims");\n'
        "  NVTE_CHECK(k > 0);\n"
        '  NVTE_ERROR("Invalid type {", n, "}.");\n'
        "}\n"
    )
    found = {(m.level, m.text, m.style) for m in extract(tmp_path, "2.8")}
    assert found == {
        (
            "CHECK",
            "status != CUBLAS_STATUS_NOT_SUPPORTED. Unable to find suitable cuBLAS GEMM algorithm",
            "literal",
        ),
        ("CHECK", "a.dim() == 2. Expected {} dims", "brace"),
        ("CHECK", "k > 0.", "literal"),
        ("ERROR", "Invalid type {{{}}}.", "brace"),
    }
