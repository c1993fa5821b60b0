"""Real lines FBGEMM_GPU printed in failed runs meet the signatures generated from its source
(catalogs/fbgemm_gpu), its reviewed mapping decides the operators' and the TBE modules' messages
as a reviewer would, and its extractor reads the tensor-check macros, the Jinja-templated kernels
and the kernels' printf.

Every real line below is copied from the public thread named beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from catalogs.fbgemm_gpu.extract import extract
from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_catalog_reads, assert_mapped, catalog_hits, decide

FAMILY = "fbgemm_gpu_cat"
RULES = Path(__file__).resolve().parents[2] / "rules"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/meta-pytorch/torchrec/issues/575: TBE's bounds check (FBGEMM_GPU 0.2-0.4),
        # a feature id equal to its table's num_embeddings
        (
            "EmbeddingBoundsCheck: (at least one) Out of bounds access for batch: 26, table: 6,"
            " bag element: 0, idx: 10, num_rows: 10, indices_start: 1466, indices_end: 1467,"
            " T: 12, B: 64, b_t: 410. Setting idx to zero.",
            "data_preprocessing_error",
        ),
        # github.com/pytorch/FBGEMM/pull/6244: one of the split libraries of 1.3+ did not load
        (
            "ERROR:root:Could not load the library 'fbgemm_gpu_tbe_training_backward_dense.so'!",
            "dependency_error",
        ),
        # github.com/pytorch/FBGEMM/pull/1267: jagged_to_padded_dense's backward given offsets
        # for another number of jagged dimensions
        ("x_offsets.size(), 1 != num_jagged_dim, 0", "shape_or_dtype_error"),
    ],
)
def test_a_real_fbgemm_gpu_line_gets_its_class(
    matcher: Matcher, text: str, failure_class: str
) -> None:
    assert_catalog_reads(matcher, text, FAMILY, failure_class)


def test_a_load_failure_that_names_its_undefined_symbol_stays_a_dependency_error(
    matcher: Matcher,
) -> None:
    # github.com/NVIDIA/recsys-examples/issues/65 (the loader of 1.1-1.2): the hand-written
    # undefined-symbol signature reads the line first; the class is the same
    line = (
        "ERROR:root:Could not load the library 'fbgemm_gpu_py.so':"
        " /root/miniconda3/lib/python3.12/site-packages/fbgemm_gpu/fbgemm_gpu_py.so: undefined"
        " symbol: _ZN3tbb6detail2r117deallocate_memoryEPv"
    )
    top = matcher.scan_text(line)
    assert top and top[0].signature.failure_class == "dependency_error"


@pytest.mark.parametrize(
    ("text", "level", "file", "failure_class"),
    [
        # 1.8 include/fbgemm_gpu/utils/tensor_utils.h: TENSOR_ON_CUDA_GPU(x)
        (
            "{} must be a CUDA tensor; it is currently on device {}",
            "RuntimeError",
            "fbgemm_gpu/include/fbgemm_gpu/utils/tensor_utils.h",
            "shape_or_dtype_error",
        ),
        # 1.8 src/jagged_tensor_ops/common.cuh: a jagged tensor's offsets for other dimensions
        (
            "x_offsets.size(), {} != num_jagged_dim, {}",
            "RuntimeError",
            "fbgemm_gpu/src/jagged_tensor_ops/common.cuh",
            "shape_or_dtype_error",
        ),
        # 1.8 codegen/training/forward/embedding_forward_split_template.cu: the unified TBE API
        # left the per-optimizer lookups as stubs an older TorchRec still calls
        (
            "split_embedding_codegen_lookup_{}_function is deprecated. Please see"
            " https://github.com/pytorch/FBGEMM/discussions/1727 for more detail.",
            "RuntimeError",
            "fbgemm_gpu/codegen/training/forward/embedding_forward_split_template.cu",
            "dependency_error",
        ),
        # 1.8 src/split_embeddings_cache/lfu_cache_populate.cu: an AMD GPU with 32-wide warps
        (
            "{}: TBE cache requires warpSize 64 on ROCm (got {}); warpSize 32 devices are not yet"
            " supported",
            "RuntimeError",
            "fbgemm_gpu/src/split_embeddings_cache/lfu_cache_populate.cu",
            "unsupported_gpu_arch",
        ),
        # 1.8 include/fbgemm_gpu/utils/cpu_utils.h: the CPU TBE's check of an id against its table
        (
            "Index {} is out of bounds: {}, range {} to {}",
            "RuntimeError",
            "fbgemm_gpu/include/fbgemm_gpu/utils/cpu_utils.h",
            "data_preprocessing_error",
        ),
        # 1.8 include/fbgemm_gpu/utils/tensor_accessor.h: printed right before a kernel assertion
        (
            "[%s][Tensor %s] CUDA Kernel Assertion: index is outside of accessor bounds (idx=%ld)"
            " >= (numel=%ld)\n",
            "PRINTF",
            "fbgemm_gpu/include/fbgemm_gpu/utils/tensor_accessor.h",
            "device_side_assert",
        ),
        # 1.8 fbgemm_gpu/split_table_batched_embeddings_ops_training.py: a TBE setting refused
        (
            "Only LRU cache policy supports prefetch_pipeline.",
            "AssertionError",
            "fbgemm_gpu/fbgemm_gpu/split_table_batched_embeddings_ops_training.py",
            "framework_config_error",
        ),
    ],
)
def test_the_mapping_gives_a_mechanism_its_class(
    text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped("fbgemm_gpu", text, level, file, failure_class)


def test_the_kernels_warnings_and_the_version_notices_are_not_evidence() -> None:
    file = "fbgemm_gpu/codegen/training/backward/embedding_backward_split_template.cu"
    assert decide("fbgemm_gpu", "Running on CDNA architecture", "TORCH_WARN", file).disposition in (
        "context",
        "excluded",
    )
    notice = (
        "\n  FBGEMM_GPU version is {version}, which is not guaranteed to be\n  compatible with"
        " PyTorch {torch.__version__}; library loading might\n  crash!\n"
    )
    loader = "fbgemm_gpu/fbgemm_gpu/__init__.py"
    assert decide("fbgemm_gpu", notice, "WARNING", loader).disposition == "context"


def test_a_check_other_programs_word_alike_is_left_out() -> None:
    for text in ("Optimizer {optimizer} is not supported.", "input must be contiguous"):
        decision = decide("fbgemm_gpu", text, "RuntimeError", "fbgemm_gpu/src/x.cu")
        assert decision.disposition == "excluded"


def test_a_healthy_fbgemm_gpu_line_is_not_matched(matcher: Matcher) -> None:
    for line in (
        "INFO:root:Successfully loaded: 'fbgemm_gpu_py.so'",
        "INFO:root:FBGEMM version is a nightly version, ignoring version compatibility check with"
        " PyTorch",
        "[W1201 03:12:07.412345123 embedding_backward_split_template.cu:489] Warning: Running on"
        " non-CDNA architecture. Performance may be suboptimal.",
    ):
        assert not catalog_hits(matcher, line, FAMILY)


def test_the_extractor_reads_macro_bodies_templates_and_printf(tmp_path: Path) -> None:
    utils = tmp_path / "fbgemm_gpu" / "include" / "fbgemm_gpu" / "utils"
    utils.mkdir(parents=True)
    (utils / "tensor_utils.h").write_text(
        "#define TENSOR_NDIM_EQUALS(ten, dims)      \\\n"
        "  TORCH_CHECK(                             \\\n"
        "      (ten).ndimension() == (dims),        \\\n"
        '      "Tensor \'" #ten "\' must have " #dims \\\n'
        '      " dimension(s). "                    \\\n'
        '      "Found ",                            \\\n'
        "      (ten).ndimension())\n"
    )
    codegen = tmp_path / "fbgemm_gpu" / "codegen" / "utils"
    codegen.mkdir(parents=True)
    (codegen / "lookup_template.cu").write_text(
        "void f() {\n"
        '  TORCH_CHECK(false, "split_embedding_codegen_lookup_{{ optimizer }}_function is gone");\n'
        '  printf("EmbeddingBoundsCheck: idx: %lld, num_rows: %lld.\\n", idx, n);\n'
        "}\n"
    )
    (utils / "tensor_utils.h").write_text(
        (utils / "tensor_utils.h").read_text()
        + "std::string tensor_scalar_type_is_one_of(const at::Tensor& ten) {\n"
        + '  std::string msg = "Tensor\'s scalar type (";\n'
        + "  msg.append(toString(ten.scalar_type()));\n"
        + '  msg.append(") did not match any one of the following types: [");\n'
        + '  msg.append(", ");\n'
        + "  return msg;\n"
        + "}\n"
    )
    found = {(m.level, m.text, m.style) for m in extract(tmp_path, "1.8")}
    assert (
        "RuntimeError",
        "Tensor '{}' must have {} dimension(s). Found {}",
        "brace",
    ) in found
    assert (
        "RuntimeError",
        "Tensor's scalar type ({}) did not match any one of the following types: [{}",
        "brace",
    ) in found
    functions = {m.text: m.function for m in extract(tmp_path, "1.8")}
    assert functions["Tensor '{}' must have {} dimension(s). Found {}"] == "TENSOR_NDIM_EQUALS"
    assert ("RuntimeError", "split_embedding_codegen_lookup_{}_function is gone", "brace") in found
    assert ("PRINTF", "EmbeddingBoundsCheck: idx: %lld, num_rows: %lld.\n", "printf") in found


def test_the_catalog_reads_the_release_lines() -> None:
    accounting = json.loads((RULES / FAMILY / "CATALOG.json").read_text())
    assert [row["line"] for row in accounting["releases"]] == ["0.4", "0.6", "0.8", "1.2", "1.8"]
    assert all(row["found"] > 0 for row in accounting["releases"])
