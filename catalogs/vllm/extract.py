"""vLLM's failure messages, from the source of a pinned release (see source.yaml).

Scope: the engine and the serving path (config, engine/v1, executor, worker, distributed,
platforms, model loader, attention back-ends, quantization config, entrypoints, compilation).
Per-model files, vendored third-party code, bundled flash-attn, tool and reasoning parsers,
fused-MoE and other kernel wrappers, disaggregated KV/weight transfer, speculative decoding, LoRA
and the per-request validation of the OpenAI endpoints (an HTTP 400 to one client, not a failed
server) are out of scope. Older lines (0.2 to 0.8) hold the same out-of-scope code elsewhere:
speculative decoding in `spec_decode/`, structured output in `model_executor/guided_decoding/`,
prompt adapters beside LoRA (`prompt_adapter/`, `adapter_commons/`), kernel wrappers in
`attention/ops/` and `model_executor/layers/ops/`, rotary embeddings in one module.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.python_messages import extract_python

INCLUDE = ("vllm/",)
EXCLUDE = (
    "vllm/model_executor/models/",
    "vllm/third_party/",
    "vllm/vllm_flash_attn/",
    "vllm/tool_parsers/",
    "vllm/reasoning/",
    "vllm/entrypoints/openai/tool_parsers/",
    "vllm/parser/",
    "vllm/renderers/",
    "vllm/benchmarks/",
    "vllm/multimodal/",
    "vllm/transformers_utils/processors/",
    "vllm/transformers_utils/configs/",
    "vllm/model_executor/layers/fla/",
    "vllm/kernels/",
    "vllm/models/",
    "vllm/model_executor/layers/fused_moe/",
    "vllm/model_executor/layers/fusion/",
    "vllm/model_executor/layers/hpc/",
    "vllm/model_executor/layers/mamba/",
    "vllm/model_executor/layers/minimax_rms_norm/",
    "vllm/model_executor/layers/pooler/",
    "vllm/model_executor/layers/rotary_embedding/",
    "vllm/model_executor/layers/quantization/utils/",
    "vllm/model_executor/layers/quantization/kernels/",
    "vllm/model_executor/layers/attention/",
    "vllm/model_executor/kernels/",
    "vllm/v1/attention/ops/",
    "vllm/distributed/kv_transfer/",
    "vllm/distributed/weight_transfer/",
    "vllm/distributed/ec_transfer/",
    "vllm/distributed/aux_output_connector/",
    "vllm/v1/kv_offload/",
    "vllm/v1/hisparse/",
    "vllm/v1/spec_decode/",
    "vllm/v1/structured_output/",
    "vllm/snapshot/",
    "vllm/entrypoints/openai/",
    "vllm/entrypoints/pooling/",
    "vllm/entrypoints/generate/",
    "vllm/entrypoints/scale_out/",
    "vllm/sampling_params.py",
    "vllm/lora/",
    # the same scope in the 0.2 to 0.8 layouts
    "vllm/spec_decode/",
    "vllm/model_executor/guided_decoding/",
    "vllm/prompt_adapter/",
    "vllm/adapter_commons/",
    "vllm/attention/ops/",
    "vllm/model_executor/layers/ops/",
    "vllm/model_executor/layers/rotary_embedding.py",
)
# `assert cond, "..."` is a user-facing check only in these files (configuration and argument
# validation); elsewhere an assert is an internal invariant and is not a message users act on.
ASSERT_PATHS = ("vllm/config/", "vllm/engine/arg_utils.py", "vllm/platforms/")


def extract(checkout: Path, release: str) -> list:
    return extract_python(checkout, release, "vllm", INCLUDE, EXCLUDE, ASSERT_PATHS)
