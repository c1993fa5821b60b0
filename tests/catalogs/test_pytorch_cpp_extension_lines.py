"""Real lines torch.utils.cpp_extension printed when an extension failed to build or JIT-load meet
the signatures generated from its source (catalogs/pytorch_cpp_extension); the notes a healthy
build prints are matched by none of them.

Every line marked real is copied from the public thread named beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from catalogs.pytorch_cpp_extension.extract import extract
from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_mapped, catalog_hits

FAMILY = "pytorch_cpp_extension_cat"
RULES = Path(__file__).resolve().parents[2] / "rules"
BUILDER = "torch/utils/cpp_extension.py"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # real, github.com/icip-cas/AutoAlign/issues/25: pip's build output, the RuntimeError's
        # text on the lines after "RuntimeError:", as the 2.0-2.4 constant breaks it
        (
            "RuntimeError:\n"
            "      The detected CUDA version (11.8) mismatches the version that was used to"
            " compile\n"
            "      PyTorch (12.4). Please make sure to use the same CUDA versions.",
            "cuda_driver_mismatch",
        ),
        # real, github.com/Jimver/cuda-toolkit/issues/374 (a flash-attention wheel build in CI)
        (
            "  OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA"
            " install root.",
            "dependency_error",
        ),
        # real, github.com/CSAILVision/unifiedparsing/issues/12 (a JIT load without ninja)
        ("RuntimeError: Ninja is required to load C++ extensions", "dependency_error"),
        # real, github.com/sczhou/ProPainter/issues/21 (an RTX 30xx with a torch that predates it)
        ("    ValueError: Unknown CUDA arch (8.6) or GPU not supported", "unsupported_gpu_arch"),
        # real, github.com/mit-han-lab/torchsparse/issues/189 (g++ 11 with CUDA 11.3's nvcc)
        (
            "      RuntimeError: The current installed version of x86_64-linux-gnu-g++ (11.3.0) is"
            " greater than the maximum required version by CUDA 11.3 (10.0.0). Please make sure to"
            " use an adequate version of x86_64-linux-gnu-g++ (>=5.0.0, <=10.0.0).",
            "dependency_error",
        ),
        # real, github.com/oobabooga/textgen/issues/2131 (g++ 13 with CUDA 11.7's nvcc)
        (
            "      RuntimeError: The current installed version of g++ (13.1.1) is greater than the"
            " maximum required version by CUDA 11.7. Please make sure to use an adequate version of"
            " g++ (>=6.0.0, <12.0).",
            "dependency_error",
        ),
        # 2.13's form, rendered from its source: the constant is passed to RuntimeError with
        # the versions as more arguments, so the exception prints the tuple, `%s` unfilled
        (
            "RuntimeError: ('The detected CUDA version (%s) mismatches the version that was used"
            " to compilePyTorch (%s). Please make sure to use the same CUDA versions.', '12.8',"
            " '12.4')",
            "cuda_driver_mismatch",
        ),
    ],
)
def test_a_real_build_failure_line_gets_its_class(
    matcher: Matcher, text: str, failure_class: str
) -> None:
    hits = catalog_hits(matcher, text, FAMILY)
    assert hits, f"no {FAMILY} signature matched"
    assert failure_class in {m.signature.failure_class for m in hits}


def test_the_compiler_name_warning_is_only_a_low_prior(matcher: Matcher) -> None:
    # real, github.com/pytorch/pytorch/issues/25811: the warning's first line; builds with a
    # compiler named c++ usually go on and succeed
    hits = catalog_hits(
        matcher, "Your compiler (c++) is not compatible with the compiler Pytorch was", FAMILY
    )
    assert hits
    assert all(m.signature.confidence <= 0.35 for m in hits)


@pytest.mark.parametrize(
    "text",
    [
        # real, github.com/open-mmlab/mmdetection/issues/6404: the toolkit found on a node where
        # torch sees no GPU (a build in pip's isolation, a CPU node); the build goes on
        "No CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'",
        # real, github.com/facebookresearch/pytorch3d/issues/442: a build that goes on
        "  Allowing ninja to set a default number of workers... (overridable by setting the"
        " environment variable MAX_JOBS=N)",
        "  Compiling objects...",
        "Emitting ninja build file"
        " /root/.cache/torch_extensions/py311_cu124/fused_adam/build.ninja...",
        "Using /root/.cache/torch_extensions/py311_cu124 as PyTorch extensions root...",
        # the minor-version note, which says itself that it is harmless (2.4 wording)
        "UserWarning: The detected CUDA version (12.1) has a minor version mismatch with the"
        " version that was used to compile PyTorch (12.4). Most likely this shouldn't be a"
        " problem.",
    ],
)
def test_a_healthy_build_line_is_not_matched(matcher: Matcher, text: str) -> None:
    assert not catalog_hits(matcher, text, FAMILY)


@pytest.mark.parametrize(
    ("text", "level", "failure_class"),
    [
        (
            "nvcc not found at '{nvcc}'. Ensure CUDA path '{CUDA_HOME}' is correct.",
            "FileNotFoundError",
            "dependency_error",
        ),
        (
            "CUDA was not found on the system, please set the CUDA_HOME or the CUDA_PATHenvironment"
            " variable or add NVCC to your system PATH. The extension compilation will fail.",
            "RuntimeError",
            "dependency_error",
        ),
        ("Unknown CUDA arch ({arch}) or GPU not supported", "ValueError", "unsupported_gpu_arch"),
        (
            "`is_python_module` and `is_standalone` are mutually exclusive.",
            "ValueError",
            "framework_config_error",
        ),
    ],
)
def test_the_mapping_gives_a_mechanism_its_class(text: str, level: str, failure_class: str) -> None:
    assert_mapped("pytorch_cpp_extension", text, level, BUILDER, failure_class)


def test_the_extractor_reads_module_constants_prefixes_and_prints(tmp_path: Path) -> None:
    source = tmp_path / BUILDER
    source.parent.mkdir(parents=True)
    source.write_text(
        "import logging, sys, warnings\n"
        "logger = logging.getLogger(__name__)\n"
        "MISMATCH = '''\nThe detected CUDA version ({0}) mismatches\nPyTorch ({1}).\n'''\n"
        "ABI = ('   !! WARNING !!' '!!!!!!!!!!!!!!!!!!!!!!!!'\n"
        "       'Your compiler (%s) may be ABI-incompatible.')\n"
        "def check(found, built):\n"
        "    if found != built:\n"
        "        raise RuntimeError(MISMATCH.format(found, built))\n"
        "    logger.warning(ABI, 'c++')\n"
        "def build(name):\n"
        "    print(f'Building extension module {name}...', file=sys.stderr)\n"
        "    _run_ninja_build('/tmp', True, error_prefix=f\"Error building extension '{name}'\")\n"
    )
    found = {(m.level, m.text, m.style) for m in extract(tmp_path, "2.4")}
    mismatch = "\nThe detected CUDA version ({0}) mismatches\nPyTorch ({1}).\n"
    assert ("RuntimeError", mismatch, "brace") in found
    # the warning banner is left out: the message starts at its statement
    assert ("WARNING", "Your compiler (%s) may be ABI-incompatible.", "printf") in found
    assert ("PRINT", "Building extension module {name}...", "fstring") in found
    assert ("RuntimeError", "Error building extension '{name}'", "fstring") in found


def test_the_catalog_reads_three_release_lines() -> None:
    accounting = json.loads((RULES / FAMILY / "CATALOG.json").read_text())
    assert [row["line"] for row in accounting["releases"]] == ["2.0", "2.4", "2.13"]
    assert all(row["found"] > 0 for row in accounting["releases"])
