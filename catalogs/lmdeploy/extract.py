"""LMDeploy's failure messages (its Python parts), from the source of a pinned release (see
source.yaml).

Scope: the pipeline and serving engine (api.py, pipeline.py, the engine configs in messages.py,
serve/core, serve/managers), the CLI, the PyTorch engine (engine, executors and model agent,
cache engine, paging, check_env, distributed and Ray set-up, devices, configs) and TurboMind's
Python loader/converter. Per-model code, kernels, vendored third-party code, multimodal/vision
pre-processing, speculative decoding, disaggregated KV transfer, the quantization tools (lite)
and the per-request validation of the OpenAI/Anthropic endpoints (an HTTP 400 to one client, not
a failed server) are out of scope; the compiled TurboMind engine's C++ messages are not read.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.python_messages import extract_python

INCLUDE = (
    "lmdeploy/api.py",
    "lmdeploy/pipeline.py",
    "lmdeploy/messages.py",
    "lmdeploy/utils.py",
    "lmdeploy/cli/",
    "lmdeploy/serve/core/",
    "lmdeploy/serve/managers/",
    "lmdeploy/serve/utils/",
    "lmdeploy/pytorch/",
    "lmdeploy/turbomind/",
)
EXCLUDE = (
    "lmdeploy/pytorch/models/",
    "lmdeploy/pytorch/kernels/",
    "lmdeploy/pytorch/third_party/",
    "lmdeploy/pytorch/nn/",
    "lmdeploy/pytorch/transformers/",
    "lmdeploy/pytorch/multimodal/",
    "lmdeploy/pytorch/spec_decode/",
    "lmdeploy/pytorch/kv_connector/",
    "lmdeploy/pytorch/disagg/",
    "lmdeploy/pytorch/backends/",
    "lmdeploy/pytorch/tools/",
    "lmdeploy/pytorch/weight_loader/",
    "lmdeploy/pytorch/adapter/",
    "lmdeploy/turbomind/models/",
    "lmdeploy/turbomind/builders/",
    # internal invariants of the block/prefix-cache bookkeeping, not messages users act on
    "lmdeploy/pytorch/paging/block_trie/",
    "lmdeploy/pytorch/engine/cache_engine/",
    "lmdeploy/pytorch/memdecode/",
)
# `assert cond, "..."` is a user-facing check only in these files (engine configuration);
# elsewhere an assert is an internal invariant and is not a message users act on.
ASSERT_PATHS = ("lmdeploy/messages.py", "lmdeploy/pytorch/config.py", "lmdeploy/cli/")


def extract(checkout: Path, release: str) -> list:
    return extract_python(checkout, release, "lmdeploy", INCLUDE, EXCLUDE, ASSERT_PATHS)
