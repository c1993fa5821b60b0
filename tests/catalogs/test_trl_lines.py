"""Real lines TRL printed in failed runs meet the signatures generated from its source
(catalogs/trl), and its reviewed mapping decides messages as a reviewer would: the vLLM server
out of reach, a dataset without the columns a trainer needs, trainer arguments that conflict.

Every real line below is copied from the public thread named beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_catalog_reads, assert_mapped, catalog_hits, decide

FAMILY = "trl_cat"
RULES = Path(__file__).resolve().parents[2] / "rules"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/huggingface/open-r1/issues/249: GRPO's global batch and num_generations
        (
            "[rank1]: ValueError: The global train batch size (7 x 1) must be evenly divisible by"
            " the number of generations per prompt (8). Given the current train batch size, the"
            " valid values for the number of generations are: [7].",
            "framework_config_error",
        ),
        # github.com/modelscope/ms-swift/issues/1574: a reference model copied under ZeRO-3
        (
            "[rank0]: ValueError: DeepSpeed ZeRO-3 is enabled and is not compatible with"
            " `create_reference_model()`. Please instantiate your reference model directly with"
            " `AutoCausalLM.from_pretrained()`.",
            "framework_config_error",
        ),
        # github.com/huggingface/trl/issues/434: SFTTrainer 0.8 given no text field
        (
            "ValueError: You passed `packing=False` to the SFTTrainer, but you didn't pass a"
            " `dataset_text_field` or `formatting_func` argument.",
            "framework_config_error",
        ),
    ],
)
def test_a_real_trl_line_gets_its_class(matcher: Matcher, text: str, failure_class: str) -> None:
    assert_catalog_reads(matcher, text, FAMILY, failure_class)


@pytest.mark.parametrize(
    ("text", "level", "file", "failure_class"),
    [
        # 1.9 trl/generation/vllm_client.py: `trl vllm-serve` never answered
        (
            "The vLLM server can't be reached at {self.base_url} after {total_timeout} seconds."
            " Make sure the server is running by running `trl vllm-serve`.",
            "ConnectionError",
            "trl/generation/vllm_client.py",
            "rendezvous_failure",
        ),
        # 1.9 trl/scripts/vllm_serve.py: the server and a trainer rank on one GPU
        (
            "Attempting to use the same CUDA device (UUID: {client_device_uuid}) for multiple"
            " distinct roles/ranks within the same communicator.",
            "RuntimeError",
            "trl/scripts/vllm_serve.py",
            "launch_config_error",
        ),
        # 1.9 trl/trainer/sft_trainer.py: a dataset with neither `messages` nor `text`
        (
            "The input examples must contain either 'messages' for conversational data or 'text'"
            " for standard data.",
            "KeyError",
            "trl/trainer/sft_trainer.py",
            "data_preprocessing_error",
        ),
        # 0.15 trl/trainer/utils.py: a tokenizer with no pad token
        (
            "Padding is enabled, but the tokenizer is not configured with a padding token."
            " Explicitly set `tokenizer.pad_token` (e.g. `tokenizer.pad_token ="
            " tokenizer.eos_token`) before calling the trainer.",
            "ValueError",
            "trl/trainer/utils.py",
            "data_preprocessing_error",
        ),
        # 0.8 trl/trainer/dpo_trainer.py: model kwargs for a model already built
        (
            "You passed model_kwargs to the DPOTrainer. But your model is already instantiated.",
            "ValueError",
            "trl/trainer/dpo_trainer.py",
            "framework_config_error",
        ),
    ],
)
def test_the_mapping_gives_a_mechanism_its_class(
    text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped("trl", text, level, file, failure_class)


def test_a_deprecation_notice_is_not_a_failure() -> None:
    decision = decide(
        "trl",
        "The `max_seq_length` argument is deprecated and will be removed in a future version.",
        "WARNING",
        "trl/trainer/sft_config.py",
    )
    assert decision.disposition != "mapped"


def test_a_healthy_trl_line_is_not_matched(matcher: Matcher) -> None:
    for line in (
        "{'loss': 0.6931, 'grad_norm': 1.25, 'learning_rate': 5e-07, 'rewards/chosen': 0.0,"
        " 'epoch': 0.01}",
        "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)",
        "Map: 100%|██████████| 12859/12859 [00:04<00:00, 2871.43 examples/s]",
    ):
        assert not catalog_hits(matcher, line, FAMILY)


def test_the_catalog_reads_the_release_lines() -> None:
    accounting = json.loads((RULES / FAMILY / "CATALOG.json").read_text())
    assert [row["line"] for row in accounting["releases"]] == ["0.8", "0.15", "1.9"]
    assert all(row["found"] > 0 for row in accounting["releases"])
