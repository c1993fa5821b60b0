"""Transformers' failure messages, from the source of a pinned release (see source.yaml).

Scope: the library core a training or serving run goes through: Trainer and TrainingArguments,
model loading (modeling_utils, core_model_loading, configuration, hub, import checks), tokenizers'
base classes, integrations (DeepSpeed, FSDP, PEFT, quantizers), generation, data collators, losses.
Per-model files (`models/`), pipelines, exporters and the CLI are out of scope: thousands of
per-architecture argument checks a failed training run does not print. So are the agents (4.29 to
4.3x ship them as `tools/`, later as `agents/`) and the old `benchmark/` utility (up to 4.3x).
"""

from __future__ import annotations

from pathlib import Path

from catalogs.python_messages import extract_python

INCLUDE = ("src/transformers/",)
EXCLUDE = (
    "src/transformers/models/",
    "src/transformers/pipelines/",
    "src/transformers/commands/",
    "src/transformers/cli/",
    "src/transformers/exporters/",
    "src/transformers/testing_utils.py",
    "src/transformers/audio_utils.py",
    "src/transformers/video_utils.py",
    "src/transformers/video_processing_utils.py",
    "src/transformers/image_utils.py",
    "src/transformers/image_transforms.py",
    "src/transformers/image_processing_utils.py",
    "src/transformers/image_processing_utils_fast.py",
    "src/transformers/tokenization_mistral_common.py",
    "src/transformers/kernels/",
    "src/transformers/agents/",
    "src/transformers/tools/",
    "src/transformers/benchmark/",
    "src/transformers/onnx/",
)
# `assert cond, "..."` is a user-facing check only in these files (configuration and argument
# validation); elsewhere an assert is an internal invariant and is not a message users act on.
ASSERT_PATHS = ("src/transformers/training_args.py", "src/transformers/trainer.py")


def extract(checkout: Path, release: str) -> list:
    return extract_python(checkout, release, "transformers", INCLUDE, EXCLUDE, ASSERT_PATHS)
