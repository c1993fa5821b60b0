"""Real lines TensorRT-LLM printed in failed runs meet the signatures generated from its source
(catalogs/tensorrt_llm), and its reviewed mapping decides messages as a reviewer would.

Every line below is copied from the public thread named beside it.
"""

from __future__ import annotations

import pytest

from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_mapped, catalog_hits, decide

FAMILY = "tensorrt_llm_cat"


@pytest.mark.parametrize(
    ("text", "failure_class", "reported"),
    [
        # github.com/NVIDIA/TensorRT-LLM/issues/213: the all-reduce plugin's NCCLCHECK on 4 A100s
        (
            "> Failed, NCCL error /src/tensorrt_llm/cpp/tensorrt_llm/plugins/ncclPlugin/"
            "allreducePlugin.cpp:295 'internal error - please report this issue to the NCCL"
            " developers'",
            "nccl_internal_error",
            "nccl_internal_error",
        ),
        # github.com/NVIDIA/TensorRT-LLM/issues/1039
        (
            "Failed, NCCL error /home/jenkins/agent/workspace/LLM/main/L0_MergeRequest/"
            "tensorrt_llm/cpp/tensorrt_llm/plugins/ncclPlugin/allreducePlugin.cpp:183"
            " 'unknown result code'",
            "nccl_internal_error",
            "nccl_internal_error",
        ),
        # github.com/NVIDIA/TensorRT-LLM/issues/9263: the PyTorch back end's executor on 1.x, the
        # NCCL check quoted by the Python logger's line; NCCL's 'invalid usage' is read by the
        # hand-written NCCL signature as a launch error
        (
            "[11/18/2025-09:33:30] [TRT-LLM] [RANK 0] [E] Failed to initialize executor on rank 0:"
            " [TensorRT-LLM][ERROR] Assertion failed: Failed, NCCL error"
            " ../tensorrt_llm/runtime/ncclCommunicator.cpp:90 'invalid usage (run with"
            " NCCL_DEBUG=WARN for details)'",
            "nccl_internal_error",
            "launch_config_error",
        ),
    ],
)
def test_a_real_tensorrt_llm_line_gets_its_class(
    matcher: Matcher, text: str, failure_class: str, reported: str
) -> None:
    hits = catalog_hits(matcher, text, FAMILY)
    assert hits, f"no {FAMILY} signature matched"
    assert failure_class in {m.signature.failure_class for m in hits}
    # what the line reports: a hand-written NCCL signature that reads NCCL's error string
    assert reported in {m.signature.failure_class for m in matcher.scan_text(text)}


def test_the_executor_wrapper_is_a_symptom_that_quotes_its_cause(matcher: Matcher) -> None:
    # github.com/NVIDIA/TensorRT-LLM/issues/9263
    text = (
        "[11/18/2025-09:33:30] [TRT-LLM] [RANK 0] [E] Failed to initialize executor on rank 0:"
        " [TensorRT-LLM][ERROR] Assertion failed: Failed, NCCL error"
        " ../tensorrt_llm/runtime/ncclCommunicator.cpp:90 'invalid usage (run with"
        " NCCL_DEBUG=WARN for details)'"
    )
    hits = catalog_hits(matcher, text, FAMILY)
    roles = {(m.signature.failure_class, m.signature.role.value) for m in hits}
    assert ("unknown", "symptom") in roles


def test_a_cuda_out_of_memory_quoted_by_trtllm_is_device_oom(matcher: Matcher) -> None:
    # github.com/triton-inference-server/tensorrtllm_backend/issues/281 (TensorRT-LLM v0.7.1):
    # TensorRT-LLM's CUDA check matches as a symptom; the CUDA signatures read 'out of memory'
    text = (
        "Model 'tensorrt_llm' loading failed with error: version 1 is at UNAVAILABLE state:"
        " Internal: unexpected error when creating modelInstanceState: [TensorRT-LLM][ERROR]"
        " CUDA runtime error in ::cudaMallocAsync(ptr, n, mCudaStream->get()): out of memory"
        " (/app/tensorrt_llm/cpp/tensorrt_llm/runtime/tllmBuffers.h:112)"
    )
    assert catalog_hits(matcher, text, FAMILY)
    assert "device_oom" in {m.signature.failure_class for m in matcher.scan_text(text)}


def test_an_engine_started_on_the_wrong_number_of_ranks_is_a_launch_error(
    matcher: Matcher,
) -> None:
    # github.com/NVIDIA/TensorRT-LLM/issues/1796 (0.11): the hand-written world-size signature
    # already reads WorldConfig's check, so the catalog generates none for it
    text = (
        "RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: mpiSize == tp * pp"
        " (/home/jenkins/agent/workspace/LLM/main/L0_PostMerge/tensorrt_llm/cpp/tensorrt_llm/"
        "runtime/worldConfig.cpp:99)"
    )
    assert "launch_config_error" in {m.signature.failure_class for m in matcher.scan_text(text)}


@pytest.mark.parametrize(
    ("text", "level", "file", "failure_class"),
    [
        # v0.13.0 cpp/tensorrt_llm/runtime/tllmRuntime.cpp: the engine and the runtime disagree
        (
            "Failed to deserialize cuda engine.",
            "CHECK",
            "cpp/tensorrt_llm/runtime/tllmRuntime.cpp",
            "dependency_error",
        ),
        # v0.13.0 cpp/tensorrt_llm/runtime/gptJsonConfig.cpp
        (
            "tensor parallelism mismatch",
            "CHECK",
            "cpp/tensorrt_llm/runtime/gptJsonConfig.cpp",
            "launch_config_error",
        ),
        # 1.2 cpp/tensorrt_llm/common/opUtils.cpp: cuBLAS's workspace did not fit
        (
            "Failed to create %s. Status: %d, Context: %p, Free Memory: %zu MB (%.1f%%), Total:"
            " %zu MB. Consider reducing kv_cache_config.free_gpu_memory_fraction.",
            "THROW",
            "cpp/tensorrt_llm/common/opUtils.cpp",
            "device_oom",
        ),
        # 1.2 cpp/tensorrt_llm/runtime/ncclCommunicator.cpp
        (
            "NCCL communicator probe initialization timed out after %d seconds on rank %d of %d in"
            " NcclCommunicator::createLegacyComm. This indicates NCCL init is hung. TensorRT-LLM"
            " will not retry in-process. Set %s to adjust the timeout.",
            "THROW",
            "cpp/tensorrt_llm/runtime/ncclCommunicator.cpp",
            "rendezvous_failure",
        ),
        # 1.2 cpp/tensorrt_llm/runtime/utils/multiDeviceUtils.h
        (
            "Failed: MPI error %s:%d '%d'",
            "ERROR",
            "cpp/tensorrt_llm/runtime/utils/multiDeviceUtils.h",
            "peer_process_died",
        ),
    ],
)
def test_the_reviewed_mapping_names_the_cause(
    text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped("tensorrt_llm", text, level, file, failure_class)


@pytest.mark.parametrize(
    ("text", "level", "file", "disposition"),
    [
        # 1.2 tensorrt_llm/executor/worker.py: one request's cancellation came late
        (
            "Request of client_id {client_id} is finished, cannot abort it.",
            "PY_WARNING",
            "tensorrt_llm/executor/worker.py",
            "excluded",
        ),
        # 1.2 cpp/tensorrt_llm/runtime/tllmRuntime.cpp: a possible OOM, not one
        (
            "Layer '%s' has type '%s', which could lead to large runtime memory allocations."
            " Performance might be degraded and / or you might run out of memory.",
            "WARNING",
            "cpp/tensorrt_llm/runtime/tllmRuntime.cpp",
            "context",
        ),
    ],
)
def test_notices_and_one_request_s_errors_settle_nothing(
    text: str, level: str, file: str, disposition: str
) -> None:
    assert decide("tensorrt_llm", text, level, file).disposition == disposition
