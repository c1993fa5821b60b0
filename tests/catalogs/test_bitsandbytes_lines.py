"""Real lines bitsandbytes printed in failed runs meet the signatures generated from its source
(catalogs/bitsandbytes), its extractor reads the native library's check macros as the
preprocessor prints them, and its reviewed mapping decides messages as a reviewer would.

Every line below is copied from the public thread named beside it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from catalogs.bitsandbytes.extract import extract
from catalogs.core.mapping import Decision, load_mapping
from catalogs.core.message import Message
from denpex.match.scan import Matcher
from tests.catalogs.mappings import CATALOGS, catalog_hits

FAMILY = "bitsandbytes_cat"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/hiyouga/LlamaFactory/issues/2965: bitsandbytes 0.42.0's 8-bit AdamW under a
        # DeepSpeed job; ops.cu:216 checks the blockwise 8-bit optimizer kernel's launch
        (
            "Error invalid configuration argument at line 216 in file"
            " /mmfs1/gscratch/zlab/timdettmers/git/bitsandbytes/csrc/ops.cu",
            "dependency_error",
        ),
    ],
)
def test_a_real_bitsandbytes_line_gets_its_class(
    matcher: Matcher, text: str, failure_class: str
) -> None:
    hits = catalog_hits(matcher, text, FAMILY)
    assert hits, f"no {FAMILY} signature matched"
    assert failure_class in {m.signature.failure_class for m in hits}
    assert all(m.signature.confidence <= 0.35 for m in hits)  # the error string says what


def test_a_check_of_another_program_is_not_bitsandbytes(matcher: Matcher) -> None:
    line = "Error invalid configuration argument at line 12 in file /build/src/kernels.cu"
    assert not catalog_hits(matcher, line, FAMILY)


def _decide(text: str, level: str, file: str = "bitsandbytes/cextension.py") -> Decision:
    mapping = load_mapping(CATALOGS / "bitsandbytes" / "mapping.yaml")
    style = "printf" if "%" in text else "fstring" if "{" in text else "literal"
    return mapping.decide(Message("bitsandbytes", "x", text, style, file, 1, level, ""))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "level", "failure_class"),
    [
        # 0.41.3 bitsandbytes/cextension.py
        (
            "\n        CUDA Setup failed despite GPU being available. Please run the following"
            " command to get more information:",
            "RuntimeError",
            "dependency_error",
        ),
        # 0.43.3 bitsandbytes/cextension.py (a logger warning)
        (
            "The installed version of bitsandbytes was compiled without GPU support. 8-bit"
            " optimizers, 8-bit multiplication, and GPU quantization are unavailable.",
            "WARNING",
            "dependency_error",
        ),
        # 0.49.2 bitsandbytes/cextension.py
        (
            "Configured {BNB_BACKEND} binary not found at {cuda_binary_path}",
            "RuntimeError",
            "dependency_error",
        ),
        # 0.50.1 bitsandbytes/cextension.py: the mock library's report
        (
            "{BNB_BACKEND} {cuda_major_version}.x runtime libraries were not found in the"
            " LD_LIBRARY_PATH.",
            "REPORT",
            "dependency_error",
        ),
        # 0.50.1 csrc/pythonInterface.cpp
        ("XPU Error: sycl::malloc_shared returned nullptr for %zu bytes\n", "PRINTF", "device_oom"),
        # 0.41.3 bitsandbytes/optim/rmsprop.py: "==0.0" is an option, not a version pin
        (
            "RMSprop with alpha==0.0 is not supported!",
            "NotImplementedError",
            "framework_config_error",
        ),
    ],
)
def test_the_mapping_gives_a_mechanism_its_class(text: str, level: str, failure_class: str) -> None:
    decision = _decide(text, level)
    assert decision.disposition == "mapped"
    assert decision.failure_class == failure_class


def test_the_cuda_setup_advice_is_context() -> None:
    text = "CUDA SETUP: Solution 1a): Find the cuda runtime library via: find / -name libcudart.so"
    assert _decide(text, "CUDA_SETUP").disposition == "context"


def test_the_extractor_prints_the_check_macro_at_each_file_that_uses_it(tmp_path: Path) -> None:
    csrc = tmp_path / "csrc"
    csrc.mkdir()
    (csrc / "ops.cuh").write_text(
        "#define CUDA_CHECK_RETURN(value) {                      \\\n"
        "  cudaError_t _m_cudaStat = value;                    \\\n"
        "  if (_m_cudaStat != cudaSuccess) {                   \\\n"
        "    fprintf(                                          \\\n"
        '        stderr, "Error %s at line %d in file %s\\n",   \\\n'
        "        cudaGetErrorString(_m_cudaStat), __LINE__, __FILE__);   \\\n"
        "    exit(1);                              \\\n"
        "  } }\n"
        "#define BNB_CHECK_RETURN(value) CUDA_CHECK_RETURN(value)\n"
        "inline void checkCublasStatus(int status) {\n"
        '    if (status != 0) { printf("cuBLAS API failed with status %d\\n", status); }\n'
        "}\n"
    )
    (csrc / "ops.cu").write_text(
        "void quantize(float *A) {\n"
        "  kQuantize<<<1, 1>>>(A);\n"
        "  CUDA_CHECK_RETURN(cudaPeekAtLastError());\n"
        "  BNB_CHECK_RETURN(cudaPeekAtLastError());\n"
        "}\n"
    )
    (csrc / "pythonInterface.cpp").write_text(
        "void cprefetch(void *ptr) {\n  BNB_CHECK_RETURN(cudaMemPrefetchAsync(ptr, 1, 0, 0));\n}\n"
    )
    found = {(m.level, m.text, m.file, m.line) for m in extract(tmp_path, "0.50.1")}
    assert found == {
        ("PRINTF", "cuBLAS API failed with status %d\n", "csrc/ops.cuh", 11),
        ("PRINTF", "Error %s at line %d in file %scsrc/ops.cu\n", "csrc/ops.cu", 3),
        (
            "PRINTF",
            "Error %s at line %d in file %scsrc/pythonInterface.cpp\n",
            "csrc/pythonInterface.cpp",
            2,
        ),
    }
