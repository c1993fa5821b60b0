"""Real lines llama.cpp and ggml printed in failed runs (llama-server, Ollama, LM Studio,
llama-cpp-python and apps built on them) meet the signatures generated from their source
(catalogs/llama_cpp); the lines rules/cuda and rules/ggml read stay theirs; a KV cache that does
not fit is diagnosed as the KV cache, not as the cudaMalloc before it; and the extractor reads
llama.cpp's logging macros as they print.

Every line in the first three tests is copied from the public thread named beside it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from catalogs.llama_cpp.extract import extract
from denpex.match.scan import Matcher
from tests.catalogs.mappings import (
    assert_catalog_reads,
    catalog_hits,
    decide,
    pinned_lines,
    write_source,
)
from tests.conftest import diagnose_paths

FAMILY = "llama_cpp_cat"
RULES = Path(__file__).resolve().parents[2] / "rules"

# github.com/abetlen/llama-cpp-python/issues/1944: a 671B Q2_K model on 4x A100 80GB; the KV
# cache for the context asked for does not fit on device 0
KV_CACHE_OOM = [
    "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 204800.00 MiB on device 0:"
    " cudaMalloc failed: out of memory",
    "llama_kv_cache_init: failed to allocate buffer for kv cache",
    "llama_init_from_model: llama_kv_cache_init() failed for self-attention cache",
]


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        (KV_CACHE_OOM[1], "kv_cache_exhausted"),
        (KV_CACHE_OOM[2], "kv_cache_exhausted"),
        # github.com/ggml-org/llama.cpp/issues/8101: a 1M-token context on the CPU back end
        (
            "llama_new_context_with_model: llama_kv_cache_init() failed for self-attention cache",
            "kv_cache_exhausted",
        ),
        (
            "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size"
            " 137438953504",
            "host_oom",
        ),
        # github.com/ollama/ollama/issues/6860: the compute buffer does not fit the smallest GPU
        ("ggml_gallocr_reserve_n: failed to allocate CUDA4 buffer of size 150995968", "device_oom"),
        ("llama_new_context_with_model: failed to allocate compute buffers", "device_oom"),
        # github.com/ggml-org/llama.cpp/pull/26297: b10xxx with --log-prefix
        (
            "1.06.520.084 E ggml_gallocr_reserve_n_impl: failed to allocate CUDA1 buffer of size"
            " 54262464512",
            "device_oom",
        ),
        # github.com/ggml-org/llama.cpp/issues/20431: the weights do not fit (-ngl too high)
        ("llama_model_load: error loading model: unable to allocate CUDA0 buffer", "device_oom"),
        # github.com/ggml-org/llama.cpp/issues/15256: the Vulkan back end on an RTX 2060
        ("ggml_vulkan: Device memory allocation of size 118497280 failed.", "device_oom"),
        # github.com/ggml-org/llama.cpp/issues/29090: llama-server with a full KV cache
        (
            "[37723] 52.17.402.148 W srv        decode: failed to find free space in the KV cache,"
            " retrying with smaller batch size, off = 766, n_batch = 64, ret = 1",
            "kv_cache_exhausted",
        ),
        # github.com/QwenLM/qwen-code/issues/371: a 9M-token prompt against a 131072-token slot
        (
            "srv    send_error: task id = 2119, error: the request exceeds the available context"
            " size. try increasing the context size or enable context shift",
            "kv_cache_exhausted",
        ),
        # github.com/ollama/ollama/issues/12984: an Ollama built before the architecture
        (
            "ollama  | llama_model_load: error loading model: error loading model architecture:"
            " unknown model architecture: 'pangu-embedded'",
            "dependency_error",
        ),
        # github.com/ollama/ollama/issues/6998: Llama 3.2 GGUF on an older llama.cpp
        (
            "llama_model_load: error loading model: done_getting_tensors: wrong number of tensors;"
            " expected 255, got 254",
            "dependency_error",
        ),
        # github.com/LM-Kit/lm-kit-net-samples/issues/10: a truncated download
        (
            "native: llama_model_load: error loading model: tensor 'blk.11.attn_q.weight' data is"
            " not within the file bounds, model is corrupted or incomplete",
            "corrupt_or_missing_data",
        ),
        # github.com/OpenBMB/MiniCPM/issues/250: a Git LFS pointer in place of the GGUF
        ("gguf_init_from_file: invalid magic characters 'vers'", "corrupt_or_missing_data"),
        # github.com/ggml-org/llama.cpp/issues/5686: a build without the GPU's architecture
        (
            "ggml-cuda.cu:3211: ERROR: CUDA kernel vec_dot_q5_K_q8_1_impl_vmmq has no device code"
            " compatible with CUDA arch 520. ggml-cuda.cu was compiled for: 520",
            "unsupported_gpu_arch",
        ),
        # github.com/ggml-org/llama.cpp/issues/26392: llama-server --rpc to another build
        ("0.00.386.093 E RPC server version mismatch: 4.0.1", "dependency_error"),
    ],
)
def test_a_real_llama_cpp_line_gets_its_class(
    matcher: Matcher, text: str, failure_class: str
) -> None:
    assert_catalog_reads(matcher, text, FAMILY, failure_class)


@pytest.mark.parametrize(
    ("text", "signature_family", "failure_class"),
    [
        # the cudaMalloc line of llama-cpp-python#1944: rules/cuda's out-of-memory signature
        (KV_CACHE_OOM[0], "cuda", "device_oom"),
        # github.com/ggml-org/llama.cpp/issues/7427: an rpc-server aborting on an assertion;
        # rules/ggml reads every GGML_ASSERT, whatever its condition
        (
            "GGML_ASSERT: /usr/local/src/ai/llamacpp/llama.cpp/ggml-backend.c:226: offset + size"
            ' <= ggml_nbytes(tensor) && "tensor write out of bounds"',
            "ggml",
            "native_crash",
        ),
    ],
)
def test_a_line_a_hand_written_signature_reads_stays_its(
    matcher: Matcher, text: str, signature_family: str, failure_class: str
) -> None:
    [top] = matcher.scan_text(text)
    assert (top.signature.family, top.signature.failure_class) == (
        signature_family,
        failure_class,
    )


def test_the_catalog_does_not_read_assertions_or_bare_cuda_errors(matcher: Matcher) -> None:
    # github.com/ggml-org/llama.cpp/issues/7427 (the assertion) and github.com/nextcloud/llm2
    # /issues/52 (ggml_cuda_error's first line): rules/ggml and the CUDA signatures read them
    assert not catalog_hits(
        matcher,
        "GGML_ASSERT: /usr/local/src/ai/llamacpp/llama.cpp/ggml-backend.c:226: offset + size"
        ' <= ggml_nbytes(tensor) && "tensor write out of bounds"',
        FAMILY,
    )
    assert not catalog_hits(matcher, "CUDA error: unspecified launch failure", FAMILY)


def test_a_kv_cache_that_does_not_fit_is_diagnosed_as_the_kv_cache(
    compiled_once: Matcher, tmp_path: Path
) -> None:
    log = tmp_path / "llama-server.log"
    log.write_text("\n".join(KV_CACHE_OOM) + "\n")
    causes = diagnose_paths([str(log)]).root_causes
    assert causes[0].failure_class == "kv_cache_exhausted"


def test_the_mapping_keeps_a_low_default_and_reads_the_context_first() -> None:
    default = decide("llama_cpp", "unknown pooling type", "ABORT", "src/llama-context.cpp")
    assert default.failure_class == "native_crash"
    assert default.confidence is not None and default.confidence <= 0.35
    kv = decide("llama_cpp", "failed to allocate buffer for kv cache", "THROW context", "src/x.cpp")
    assert (kv.failure_class, kv.role) == ("kv_cache_exhausted", "root_cause")
    assert kv.confidence is not None and kv.confidence > 0.8
    compute = decide("llama_cpp", "failed to allocate compute buffers\n", "ERROR", "src/x.cpp")
    assert compute.failure_class == "device_oom"
    # a client's malformed request is the server's answer, not the run's failure
    request = decide("llama_cpp", '"prompt" is required', "THROW", "tools/server/utils.hpp")
    assert request.disposition == "context"
    # the CUDA error string alone is rules/cuda's
    cuda = decide("llama_cpp", "CUDA error: %s\n", "ERROR bare", "ggml/src/ggml-cuda/ggml-cuda.cu")
    assert cuda.disposition == "excluded"


def test_the_catalog_reads_every_pinned_line() -> None:
    pinned = pinned_lines(FAMILY)
    assert [line for line, _ in pinned] == ["b2366", "b5308", "b11312"]
    assert all(signatures > 0 for _, signatures in pinned)


def test_the_extractor_reads_llama_cpp_as_it_prints(tmp_path: Path) -> None:
    write_source(
        tmp_path,
        "src/llama-kv-cache.cpp",
        "bool llama_kv_cache::init(int n) {\n"
        '    LLAMA_LOG_ERROR("%s: failed to allocate buffer for kv cache\\n", __func__);\n'
        '    LLAMA_LOG_WARN("warning: munmap failed: %s\\n", strerror(errno));\n'
        '    LLAMA_LOG_INFO("%s: KV buffer size = %8.2f MiB\\n", __func__, size);\n'
        '    GGML_ASSERT(n > 0 && "n must be positive");\n'
        '    throw std::runtime_error("failed to create ggml context for kv cache");\n'
        "}\n",
    )
    write_source(
        tmp_path,
        "src/llama-model-loader.cpp",
        "void load_all() {\n"
        '    throw std::runtime_error(format("%s: wrong number of tensors; expected %d, got %d",'
        " __func__, a, b));\n"
        '    throw std::runtime_error("unknown model architecture: \'" + name + "\'");\n'
        "}\n",
    )
    write_source(
        tmp_path,
        "ggml/src/ggml-cuda/ggml-cuda.cu",
        "void ggml_cuda_error(const char * msg) {\n"
        '    GGML_LOG_ERROR(GGML_CUDA_NAME " error: %s\\n", msg);\n'
        '    fprintf(stdout, "not a failure: %s\\n", msg);\n'
        '    GGML_ABORT(GGML_CUDA_NAME " error");\n'
        "}\n"
        "static __device__ void no_device_code(const char * f) {\n"
        '    printf("%s: ERROR: CUDA kernel %s has no device code compatible with CUDA arch'
        ' %d.\\n", f, f, 0);\n'
        "}\n",
    )
    write_source(
        tmp_path,
        "tools/server/server-context.cpp",
        "void update_slots() {\n"
        "    SRV_ERR(\"failed to load model, '%s'\\n\", path);\n"
        '    send_error(slot, "context shift is disabled", ERROR_TYPE_SERVER);\n'
        "}\n",
    )
    found = {(m.file, m.level, m.function, m.text) for m in extract(tmp_path, "b9999")}
    kv = "src/llama-kv-cache.cpp"
    assert (kv, "ERROR", "init", "failed to allocate buffer for kv cache\n") in found
    assert (kv, "WARN bare", "init", "warning: munmap failed: %s\n") in found
    assert (kv, "THROW context", "init", "failed to create ggml context for kv cache") in found
    loader = "src/llama-model-loader.cpp"
    assert (
        loader,
        "THROW load func",
        "load_all",
        "wrong number of tensors; expected %d, got %d",
    ) in found
    assert (loader, "THROW load", "load_all", "unknown model architecture: '{}'") in found
    cuda = "ggml/src/ggml-cuda/ggml-cuda.cu"
    assert (cuda, "ERROR bare", "ggml_cuda_error", "CUDA error: %s\n") in found
    assert (cuda, "ABORT", "ggml_cuda_error", "CUDA error") in found
    server = "tools/server/server-context.cpp"
    assert (server, "SRV_ERR", "update_slots", "failed to load model, '%s'\n") in found
    assert (server, "SEND_ERROR", "update_slots", "context shift is disabled") in found
    texts = {text for _, _, _, text in found}
    assert any("has no device code compatible" in text for text in texts)
    # an info line that reports no failure, stdout, and GGML_ASSERT are not read
    assert not any("KV buffer size" in text or "not a failure" in text for text in texts)
    assert not any("GGML_ASSERT" in text or "must be positive" in text for text in texts)
