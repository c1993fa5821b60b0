"""Real lines xFormers printed in failed runs meet the signatures generated from its source
(catalogs/xformers), and its reviewed mapping decides messages as a reviewer would.

Every line below is copied from the public thread named beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from catalogs.xformers.extract import extract
from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_mapped, catalog_hits, decide

FAMILY = "xformers_cat"
RULES = Path(__file__).resolve().parents[2] / "rules"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/facebookresearch/xformers/issues/1143: dinov2 with its tensors on the CPU;
        # the dispatch error's first line, then the reason every back end gives
        (
            "NotImplementedError: No operator found for `memory_efficient_attention_forward`"
            " with inputs:",
            "dependency_error",
        ),
        ("    device=cpu (supported: {'cuda'})", "shape_or_dtype_error"),
        # github.com/sipie800/ComfyUI-PuLID-Flux-Enhanced/issues/34: bf16 on a Turing GPU
        (
            "    requires device with capability > (8, 0) but your GPU has capability (7, 5)"
            " (too old)",
            "unsupported_gpu_arch",
        ),
        ("    bf16 is only supported on A100+ GPUs", "unsupported_gpu_arch"),
        # github.com/facebookresearch/xformers/issues/1143: float32 inputs to FlashAttention-2
        (
            "    dtype=torch.float32 (supported: {torch.float16, torch.bfloat16})",
            "shape_or_dtype_error",
        ),
        # github.com/DepthAnything/Depth-Anything-V2/issues/274: the extension did not load
        ("    xFormers wasn't build with CUDA support", "dependency_error"),
        # github.com/invoke-ai/InvokeAI/issues/4788: a CPU-only torch beside a CUDA xformers
        (
            "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:",
            "dependency_error",
        ),
        # github.com/facebookresearch/xformers/issues/685: a GPU below compute capability 5.0
        (
            "RuntimeError: Your device is too old. We require compute capability >= 50",
            "unsupported_gpu_arch",
        ),
    ],
)
def test_a_real_xformers_line_gets_its_class(
    matcher: Matcher, text: str, failure_class: str
) -> None:
    hits = catalog_hits(matcher, text, FAMILY)
    assert hits, f"no {FAMILY} signature matched"
    assert failure_class in {m.signature.failure_class for m in hits}


def test_a_healthy_import_notice_is_not_evidence(matcher: Matcher) -> None:
    # github.com/facebookresearch/xformers/issues/685: printed at import wherever Triton is
    # missing (Windows); the run goes on
    line = "A matching Triton is not available, some optimizations will not be enabled."
    assert not catalog_hits(matcher, line, FAMILY)
    decision = decide("xformers", line, "WARNING", "xformers/__init__.py")
    assert decision.disposition == "context"


@pytest.mark.parametrize(
    ("text", "level", "file", "failure_class"),
    [
        # v0.0.35 xformers/ops/fmha/common.py: a GPU newer than the build knows
        (
            "requires device with capability <= {cls.CUDA_MAXIMUM_COMPUTE_CAPABILITY} but your"
            " GPU has capability {device_capability} (too new)",
            "REASON",
            "xformers/ops/fmha/common.py",
            "unsupported_gpu_arch",
        ),
        # v0.0.23 xformers/csrc/attention/cuda/fmha/attention_forward_generic.cu
        (
            "cutlassF: no kernel found to launch!",
            "RuntimeError",
            "xformers/csrc/attention/cuda/fmha/attention_forward_generic.cu",
            "unsupported_gpu_arch",
        ),
        # v0.0.35 xformers/ops/common.py
        (
            "No such operator {library}::{name} - did you forget to build xformers with"
            " `python setup.py develop`?",
            "RuntimeError",
            "xformers/ops/common.py",
            "dependency_error",
        ),
        # v0.0.35 xformers/ops/fmha/common.py
        (
            "Incompatible shapes for attention inputs:",
            "ValueError",
            "xformers/ops/fmha/common.py",
            "shape_or_dtype_error",
        ),
    ],
)
def test_the_mapping_gives_a_mechanism_its_class(
    text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped("xformers", text, level, file, failure_class)


def test_the_extractor_reads_reasons_headings_and_the_loader_text(tmp_path: Path) -> None:
    fmha = tmp_path / "xformers" / "ops" / "fmha"
    fmha.mkdir(parents=True)
    (fmha / "common.py").write_text(
        "def not_supported_reasons(cls, d):\n"
        "    reasons = []\n"
        "    if d.dtype not in cls.SUPPORTED_DTYPES:\n"
        '        reasons.append(f"dtype={d.dtype} (supported: {cls.SUPPORTED_DTYPES})")\n'
        "    return reasons\n"
    )
    (fmha / "dispatch.py").write_text(
        "def _format_not_supported_reasons(op, reasons):\n"
        '    return f"`{op.NAME}` is not supported because:"\n'
    )
    (tmp_path / "xformers" / "_cpp_lib.py").write_text(
        "class xFormersInvalidLibException(Exception):\n"
        "    def __str__(self):\n"
        "        if self.build_info is None:\n"
        '            msg = "built for another PyTorch."\n'
        "        else:\n"
        '            msg = f"built for: {self.build_info}"\n'
        '        return "xFormers can\'t load C++/CUDA extensions. " + msg\n'
    )
    found = {(m.level, m.text) for m in extract(tmp_path, "0.0.35")}
    assert found == {
        ("REASON", "dtype={d.dtype} (supported: {cls.SUPPORTED_DTYPES})"),
        ("DISPATCH", "`{op.NAME}` is not supported because:"),
        ("XFORMERS", "xFormers can't load C++/CUDA extensions. built for another PyTorch."),
        ("XFORMERS", "xFormers can't load C++/CUDA extensions. built for: {self.build_info}"),
    }


def test_the_catalog_reads_the_pinned_release_lines() -> None:
    accounting = json.loads((RULES / FAMILY / "CATALOG.json").read_text())
    read = [row["line"] for row in accounting["releases"]]
    assert read == ["0.0.23", "0.0.29", "0.0.35"]
    assert all(row["found"] > 0 for row in accounting["releases"])
