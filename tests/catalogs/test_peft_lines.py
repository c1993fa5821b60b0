"""Real lines PEFT printed in failed runs meet the signatures generated from its source
(catalogs/peft), its reviewed mapping decides messages as a reviewer would, and its extractor puts
the adapter file names back into the loading errors that interpolate them.

Every real line below is copied from the public thread named beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from catalogs.peft.extract import extract
from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_catalog_reads, assert_mapped, catalog_hits, decide

FAMILY = "peft_cat"
RULES = Path(__file__).resolve().parents[2] / "rules"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/wp931120/baichuan_sft_lora/issues/1: target_modules written for another model
        (
            "ValueError: Target modules [] not found in the base model. Please check the target"
            " modules and try again.",
            "framework_config_error",
        ),
        # github.com/hiyouga/LlamaFactory/issues/3597: GPT-2's module name on a Qwen model
        (
            "ValueError: Target modules {'c_attn'} not found in the base model. Please check the"
            " target modules and try again.",
            "framework_config_error",
        ),
        # github.com/QwenLM/Qwen/issues/1318: merge_and_unload on a GPTQ base model
        (
            "ValueError: Cannot merge LORA layers when the model is gptq quantized",
            "framework_config_error",
        ),
        # github.com/EvilPsyCHo/train_custom_LLM/issues/5: a path that holds no adapter
        (
            "ValueError: Can't find 'adapter_config.json' at './output/baichuan_lorasft/'",
            "corrupt_or_missing_data",
        ),
    ],
)
def test_a_real_peft_line_gets_its_class(matcher: Matcher, text: str, failure_class: str) -> None:
    assert_catalog_reads(matcher, text, FAMILY, failure_class)


@pytest.mark.parametrize(
    ("text", "level", "file", "failure_class"),
    [
        # 0.20 src/peft/tuners/lora/layer.py: a safe merge found the adapter's weights not finite
        (
            "NaNs detected in the merged weights. The adapter {active_adapter} seems to be broken",
            "ValueError",
            "src/peft/tuners/lora/layer.py",
            "nan_or_inf",
        ),
        # 0.20 src/peft/utils/save_and_load.py: the adapter's tensors do not fit the model
        (
            "Error(s) in loading state_dict:\n\t{'\\n\\t'.join(error_msgs)}",
            "RuntimeError",
            "src/peft/utils/save_and_load.py",
            "checkpoint_mismatch",
        ),
        # 0.20 src/peft/tuners/tuners_utils.py: exclude_modules filtered every target out
        (
            "No modules were targeted for adaptation. This might be caused by a combination of"
            " mismatched target modules and excluded modules.",
            "ValueError",
            "src/peft/tuners/tuners_utils.py",
            "framework_config_error",
        ),
        # 0.20 src/peft/tuners/lora/torchao.py: merging into a torchao-quantized base
        (
            "{type(self).__name__} was instantiated without `get_apply_tensor_subclass`, which is"
            " required to re-quantize the base layer after merging.",
            "ValueError",
            "src/peft/tuners/lora/torchao.py",
            "framework_config_error",
        ),
        # an adapter name the user's own code got wrong: no setting of the run, a low prior
        (
            "Adapter {adapter_name} not found.",
            "ValueError",
            "src/peft/peft_model.py",
            "python_exception",
        ),
    ],
)
def test_the_mapping_gives_a_mechanism_its_class(
    text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped("peft", text, level, file, failure_class)


def test_an_automatic_fix_up_stays_context() -> None:
    decision = decide(
        "peft",
        "fan_in_fan_out is set to False but the target module is `Conv1D`. Setting fan_in_fan_out"
        " to True.",
        "WARNING",
        "src/peft/tuners/lora/model.py",
    )
    assert decision.disposition == "context"


def test_a_healthy_peft_line_is_not_matched(matcher: Matcher) -> None:
    for line in (
        "trainable params: 4,194,304 || all params: 6,742,609,920 || trainable%: 0.0622",
        "Loading adapter weights from ./output/checkpoint-500 led to no missing keys.",
        "adapter_config.json: 100%|██████████| 681/681 [00:00<00:00, 2.10MB/s]",
    ):
        assert not catalog_hits(matcher, line, FAMILY)


def test_the_extractor_puts_the_file_names_back(tmp_path: Path) -> None:
    package = tmp_path / "src" / "peft"
    (package / "utils").mkdir(parents=True)
    (package / "utils" / "constants.py").write_text(
        'CONFIG_NAME = "adapter_config.json"\nTOKENIZER_CONFIG_NAME = "tokenizer_config.json"\n'
    )
    (package / "config.py").write_text(
        "def from_pretrained(path):\n"
        "    raise ValueError(f\"Can't find '{CONFIG_NAME}' at '{path}'\")\n"
    )
    found = {(m.level, m.text, m.style) for m in extract(tmp_path, "0.20")}
    assert found == {("ValueError", "Can't find 'adapter_config.json' at '{path}'", "fstring")}


def test_the_catalog_reads_the_release_lines() -> None:
    accounting = json.loads((RULES / FAMILY / "CATALOG.json").read_text())
    assert [row["line"] for row in accounting["releases"]] == ["0.7", "0.13", "0.20"]
    assert all(row["found"] > 0 for row in accounting["releases"])
