"""The CUDA runtime's error strings, read inside whichever program's wrapper quotes them."""

from __future__ import annotations

import pytest

from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_catalog_reads, catalog_hits

FAMILY = "cuda_runtime_cat"


@pytest.mark.parametrize(
    ("line", "failure_class"),
    [
        # github.com/pytorch/pytorch/issues/152077: NCCL 2.14 (CUDA 11.8 build) on an RTX 5090
        (
            "4d1a2ae696c8:50555:50555 [0] NCCL WARN Cuda failure 'named symbol not found'",
            "unsupported_gpu_arch",
        ),
        # PyTorch's C10_CUDA_CHECK wording
        ("RuntimeError: CUDA error: named symbol not found", "unsupported_gpu_arch"),
        ("torch.AcceleratorError: CUDA error: invalid device function", "unsupported_gpu_arch"),
        # nccl-tests' CUDACHECK (rendered from its format): file:line before the quoted string
        (
            "gpu-017: Test CUDA failure common.cu:892 'invalid device function'",
            "unsupported_gpu_arch",
        ),
        # CuPy's CUDARuntimeError (rendered from its format) names the code before the string
        (
            "cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorInvalidDeviceFunction:"
            " invalid device function",
            "unsupported_gpu_arch",
        ),
    ],
)
def test_a_cuda_error_string_gets_its_class_in_any_wrapper(
    matcher: Matcher, line: str, failure_class: str
) -> None:
    assert_catalog_reads(matcher, line, FAMILY, failure_class)


@pytest.mark.parametrize(
    "line",
    [
        "ls: cannot access 'x': file not found",
        "Waiting: device not ready yet",
        "RuntimeError: operation not permitted on this tensor",
    ],
)
def test_a_short_string_outside_a_cuda_wrapper_is_not_read(matcher: Matcher, line: str) -> None:
    assert not catalog_hits(matcher, line, FAMILY)
