"""Lines ATen's operators print meet the signatures generated from the shipped library
(catalogs/pytorch_aten), and its reviewed mapping decides messages as a reviewer would.

Every line below is what the installed torch (2.13.0+cpu) printed for the call beside it on this
project's machine; `test_the_installed_torch_still_prints_these_lines` makes the calls again, so
a torch that words them otherwise says the catalog needs a new release line.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from catalogs.pytorch_aten.extract import extract
from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_catalog_reads, assert_mapped, catalog_hits

FAMILY = "pytorch_aten_cat"
TORCH_ROOT = Path(torch.__file__).resolve().parents[1]

LINES: list[tuple[str, Callable[[], object], str]] = [
    # torch.split with sizes that do not add up to the dimension (torchrec's sharded embedding
    # tables reported the same check with 16 rows and a 4096 split)
    (
        "RuntimeError: split_with_sizes expects split_sizes to sum exactly to 16 (input tensor's"
        " size at dimension 0), but got split_sizes=[4096]",
        lambda: torch.zeros(16, 8).split([4096], dim=0),
        "shape_or_dtype_error",
    ),
    # broadcasting two tensors whose sizes differ (python.shape_mismatch reads it too)
    (
        "RuntimeError: The size of tensor a (4) must match the size of tensor b (8) at"
        " non-singleton dimension 1",
        lambda: torch.zeros(2, 4) + torch.zeros(2, 8),
        "shape_or_dtype_error",
    ),
    # indexing past the end on the CPU
    (
        "IndexError: index 5 is out of bounds for dimension 0 with size 3",
        lambda: torch.zeros(3)[5],
        "shape_or_dtype_error",
    ),
    # view() of a transposed tensor
    (
        "RuntimeError: view size is not compatible with input tensor's size and stride (at least"
        " one dimension spans across two contiguous subspaces). Use .reshape(...) instead.",
        lambda: torch.zeros(4, 6).t().view(24),
        "shape_or_dtype_error",
    ),
    # a matrix product of a dtype the CPU kernel has no implementation for
    (
        "NotImplementedError: \"addmm_impl_cpu_\" not implemented for 'Bool'",
        lambda: torch.mm(torch.ones(2, 2, dtype=torch.bool), torch.ones(2, 2, dtype=torch.bool)),
        "shape_or_dtype_error",
    ),
    # index_put_ with a source of another dtype
    (
        "RuntimeError: Index put requires the source and destination dtypes match, got Float for"
        " the destination and Double for the source.",
        lambda: torch.zeros(3).index_put_((torch.tensor([0]),), torch.zeros(1, dtype=torch.double)),
        "shape_or_dtype_error",
    ),
    # sampling from probabilities that hold a NaN (logits that overflowed)
    (
        "RuntimeError: probability tensor contains either `inf`, `nan` or element < 0",
        lambda: torch.multinomial(torch.tensor([float("nan"), 1.0]), 1),
        "nan_or_inf",
    ),
]


@pytest.mark.parametrize(("text", "call", "failure_class"), LINES)
def test_a_line_aten_prints_gets_its_class(
    matcher: Matcher, text: str, call: Callable[[], object], failure_class: str
) -> None:
    assert_catalog_reads(matcher, text, FAMILY, failure_class)


@pytest.mark.parametrize(("text", "call", "failure_class"), LINES)
def test_the_installed_torch_still_prints_these_lines(
    text: str, call: Callable[[], object], failure_class: str
) -> None:
    with pytest.raises(Exception) as raised:
        call()
    printed = f"{type(raised.value).__name__}: {str(raised.value).splitlines()[0]}"
    assert printed == text


def test_a_piece_that_only_joins_values_is_not_a_signature(matcher: Matcher) -> None:
    # ", but got tensor of size " sits inside many checks, ATen's and other programs'
    assert not catalog_hits(matcher, "ValueError: expected 3, but got tensor of size 4", FAMILY)


@pytest.mark.parametrize(
    ("text", "level", "file", "failure_class"),
    [
        (
            "split_with_sizes expects split_sizes to sum exactly to ",
            "FRAGMENT",
            "aten/src/ATen/native/TensorShape.cpp",
            "shape_or_dtype_error",
        ),
        (
            "Expected all tensors to be on the same device, but found at least two devices, ",
            "FRAGMENT",
            "aten/src/ATen/TensorUtils.cpp",
            "shape_or_dtype_error",
        ),
        (
            "\"{}\" not implemented for '{}'",
            "DISPATCH",
            "aten/src/ATen/Dispatch.h",
            "shape_or_dtype_error",
        ),
        (
            " does not have a deterministic implementation, but you set"
            " 'torch.use_deterministic_algorithms(True)'. ",
            "FRAGMENT",
            "aten/src/ATen/Context.cpp",
            "framework_config_error",
        ),
        (
            "unable to open shared memory object <",
            "FRAGMENT",
            "aten/src/ATen/MapAllocator.cpp",
            "shm_exhausted",
        ),
    ],
)
def test_the_mapping_gives_a_mechanism_its_class(
    text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped("pytorch_aten", text, level, file, failure_class)


def test_the_extractor_reads_atens_checks_and_leaves_other_units_out() -> None:
    found = {m.text: m for m in extract(TORCH_ROOT, "2.13")}
    split = found["split_with_sizes expects split_sizes to sum exactly to "]
    assert split.file.startswith("aten/src/ATen/native/")
    dispatch = found["\"{}\" not implemented for '{}'"]
    assert (dispatch.level, dispatch.style) == ("DISPATCH", "brace")
    assert all(m.file.startswith("aten/src/ATen/") or m.level == "DISPATCH" for m in found.values())
    # c10d's watchdog text lies in the same library, in its own unit
    assert not any("Watchdog caught collective operation timeout" in text for text in found)
