"""Real lines FlashAttention printed in failed runs meet the signatures generated from its source
(catalogs/flash_attn), and its reviewed mapping decides messages as a reviewer would.

Every line below is copied from the public thread named beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from catalogs.flash_attn.extract import extract
from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_mapped, catalog_hits

FAMILY = "flash_attn_cat"
RULES = Path(__file__).resolve().parents[2] / "rules"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/Dao-AILab/flash-attention/issues/762 (a Quadro RTX 5000, Turing)
        (
            "RuntimeError: FlashAttention only supports Ampere GPUs or newer.",
            "unsupported_gpu_arch",
        ),
        # github.com/Dao-AILab/flash-attention/issues/1540 (an RTX 5090 with a FlashAttention
        # built inside xformers; the check's line in flash_api.cpp follows)
        (
            "!!! Exception during processing !!! FlashAttention only supports Ampere GPUs or"
            " newer.",
            "unsupported_gpu_arch",
        ),
        # github.com/Dao-AILab/flash-attention/issues/775: Gemma (head dim 256) trained on 8x
        # L40S; the 2.0-2.4 wording of the largest head dimensions' backward check
        (
            "RuntimeError: FlashAttention backward for head dim > 192 requires A100/A800 or"
            " H100/H800",
            "unsupported_gpu_arch",
        ),
        # github.com/QwenAudio/FunMusic/issues/18: float32 hidden states reached flash_attn_func
        (
            "RuntimeError: FlashAttention only support fp16 and bf16 data type",
            "framework_config_error",
        ),
        # github.com/xorbitsai/inference/issues/3770: the same check behind Xinference's actor
        # prefix
        (
            "RuntimeError: [address=0.0.0.0:37093, pid=1304] FlashAttention only support fp16"
            " and bf16 data type",
            "framework_config_error",
        ),
    ],
)
def test_a_real_flash_attention_line_gets_its_class(
    matcher: Matcher, text: str, failure_class: str
) -> None:
    hits = catalog_hits(matcher, text, FAMILY)
    assert hits, f"no {FAMILY} signature matched"
    assert failure_class in {m.signature.failure_class for m in hits}


@pytest.mark.parametrize(
    ("text", "file", "failure_class"),
    [
        # v2.8.3 csrc/flash_attn/flash_api.cpp: the largest head dimensions' backward
        (
            "FlashAttention backward for head dim 256 with dropout, or head dim 224 with/without"
            " dropout requires A100/A800 or H100/H800",
            "csrc/flash_attn/flash_api.cpp",
            "unsupported_gpu_arch",
        ),
        # v2.8.3 csrc/flash_attn/flash_api.cpp: a build compiled without the feature
        (
            "This flash attention build does not support dropout.",
            "csrc/flash_attn/flash_api.cpp",
            "dependency_error",
        ),
        # v2.8.3 csrc/flash_attn/flash_api.cpp: the model's head dimension
        (
            "FlashAttention forward only supports head dimension at most 256",
            "csrc/flash_attn/flash_api.cpp",
            "framework_config_error",
        ),
        # v2.8.3 csrc/flash_attn/flash_api.cpp: CHECK_SHAPE(dout, ...), expanded
        (
            "dout must have shape (batch_size, seqlen_q, num_heads, head_size_og)",
            "csrc/flash_attn/flash_api.cpp",
            "shape_or_dtype_error",
        ),
    ],
)
def test_the_mapping_gives_a_mechanism_its_class(text: str, file: str, failure_class: str) -> None:
    assert_mapped("flash_attn", text, "RuntimeError", file, failure_class)


def test_the_extractor_expands_the_shape_shorthands(tmp_path: Path) -> None:
    source = tmp_path / "csrc" / "flash_attn" / "flash_api.cpp"
    source.parent.mkdir(parents=True)
    source.write_text(
        "#define CHECK_SHAPE(x, ...) TORCH_CHECK(x.sizes() == torch::IntArrayRef({__VA_ARGS__}),"
        ' #x " must have shape (" #__VA_ARGS__ ")")\n'
        "void mha_fwd() {\n"
        '  TORCH_CHECK(is_sm8x, "FlashAttention only supports Ampere GPUs or newer.");\n'
        "  CHECK_SHAPE(out, batch_size,  seqlen_q, num_heads);\n"
        '  TORCH_CHECK(d <= 256, "head dim ", d, " is too large");\n'
        "}\n"
    )
    found = {(m.level, m.text, m.style) for m in extract(tmp_path, "2.8.3")}
    assert found == {
        ("RuntimeError", "FlashAttention only supports Ampere GPUs or newer.", "literal"),
        ("RuntimeError", "out must have shape (batch_size, seqlen_q, num_heads)", "literal"),
        ("RuntimeError", "head dim {} is too large", "brace"),
    }


def test_the_catalog_reads_the_2023_2024_release_lines() -> None:
    accounting = json.loads((RULES / FAMILY / "CATALOG.json").read_text())
    read = [row["line"] for row in accounting["releases"]]
    assert read[:4] == ["2.1.2", "2.3.6", "2.4.2", "2.5.8"]
    assert all(row["found"] > 0 for row in accounting["releases"])
