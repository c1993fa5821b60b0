"""SGLang's failure messages, from the source of a pinned release (see source.yaml).

Scope: the runtime (`sglang/srt`: server args, scheduler, model runner, memory pool, distributed,
model loader, layers' configuration) and the launcher. Per-model files, the multimodal-generation
package, kernels, function-call parsers and benchmarks, attention/MoE/quantization kernel
wrappers, hierarchical-cache storage back-ends, disaggregation, speculative decoding, LoRA,
non-CUDA hardware back-ends and per-request validation (OpenAI endpoints, sampling) are out of
scope.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.python_messages import extract_python

INCLUDE = ("python/sglang/srt/", "python/sglang/launch_server.py", "python/sglang/utils.py")
EXCLUDE = (
    "python/sglang/srt/models/",
    "python/sglang/srt/function_call/",
    "python/sglang/srt/parser/",
    "python/sglang/srt/multimodal/",
    "python/sglang/srt/layers/attention/fla/",
    "python/sglang/srt/grpc/",
    "python/sglang/srt/layers/attention/",
    "python/sglang/srt/layers/communication/",
    "python/sglang/srt/layers/cp/",
    "python/sglang/srt/layers/dcp/",
    "python/sglang/srt/layers/deep_gemm_wrapper/",
    "python/sglang/srt/layers/layer_boundary/",
    "python/sglang/srt/layers/moe/",
    "python/sglang/srt/layers/muse_spark/",
    "python/sglang/srt/layers/rotary_embedding/",
    "python/sglang/srt/layers/utils/",
    "python/sglang/srt/layers/quantization/",
    "python/sglang/srt/mem_cache/allocator/",
    "python/sglang/srt/mem_cache/buffer_mode/",
    "python/sglang/srt/mem_cache/cpp_utils/",
    "python/sglang/srt/mem_cache/hybrid_cache/",
    "python/sglang/srt/mem_cache/layout/",
    "python/sglang/srt/mem_cache/pool_host/",
    "python/sglang/srt/mem_cache/rust_tree_core/",
    "python/sglang/srt/mem_cache/sparsity/",
    "python/sglang/srt/mem_cache/storage/",
    "python/sglang/srt/mem_cache/unified_cache/",
    "python/sglang/srt/disaggregation/",
    "python/sglang/srt/hardware_backend/",
    "python/sglang/srt/speculative/",
    "python/sglang/srt/lora/",
    "python/sglang/srt/debug_utils/",
    "python/sglang/srt/dllm/",
    "python/sglang/srt/kv_canary/",
    "python/sglang/srt/rust_extensions/",
    "python/sglang/srt/rust_server/",
    "python/sglang/srt/entrypoints/openai/",
    "python/sglang/srt/sampling/",
    "python/sglang/srt/constrained/",
)
# `assert cond, "..."` is a user-facing check only in these files (configuration and argument
# validation); elsewhere an assert is an internal invariant and is not a message users act on.
ASSERT_PATHS = ("python/sglang/srt/server_args.py",)


def extract(checkout: Path, release: str) -> list:
    return extract_python(checkout, release, "sglang", INCLUDE, EXCLUDE, ASSERT_PATHS)
