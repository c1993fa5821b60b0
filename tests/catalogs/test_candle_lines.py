"""Real lines Hugging Face candle and the cudarc crate printed in failed runs meet the signatures
generated from their source (catalogs/candle), the codes the NVIDIA catalogs already read stay
theirs, and the extractor reads candle's and cudarc's Rust as they print it.

Every line in the first two tests is copied from the public thread named beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from catalogs.candle.extract import extract
from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_catalog_reads, decide, pinned_lines, write_source

FAMILY = "candle_cat"
RULES = Path(__file__).resolve().parents[2] / "rules"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/huggingface/candle/issues/3448: weights without the tensor the model asks for
        ("Error: cannot find tensor model.embed_tokens.weight", "checkpoint_mismatch"),
        # github.com/huggingface/text-embeddings-inference/issues/548: a pooling head the
        # checkpoint does not have
        (
            "Could not start backend: cannot find tensor cls.predictions.decoder.weight",
            "checkpoint_mismatch",
        ),
        # github.com/EricLBuehler/mistral.rs/issues/689: BF16 on the CPU back end
        ("Error: unsupported dtype BF16 for op matmul", "shape_or_dtype_error"),
        # github.com/tracel-ai/burn-lm/pull/25: burn's candle CPU back end
        (
            "called `Result::unwrap()` on an `Err` value: shape mismatch in where_cond, lhs:"
            " [1, 1, 13, 13], rhs: [1, 32, 13, 13]",
            "shape_or_dtype_error",
        ),
        # github.com/mimiquate/candlex/issues/29: a candle built without its cuda feature
        (
            "Candle Error: the candle crate has not been built with cuda support",
            "dependency_error",
        ),
        # github.com/lamco-admin/lamco-rdp-server/issues/56: cudarc 0.16.6's build script
        (
            "  Unsupported cuda toolkit version: `13.3`. Please raise a github issue.",
            "dependency_error",
        ),
        # github.com/chelsea0x3b/cudarc/issues/274: cudarc 0.11.7 in nvidia/cuda runtime image
        (
            'Unable to dynamically load the "cublas" shared library - searched for library'
            ' names: ["cublas", "cublas64", "cublas64_12", "cublas64_125", "cublas64_125_0",'
            ' "cublas64_120_5", "cublas64_10", "cublas64_120_0", "cublas64_9"]. Ensure that'
            " `LD_LIBRARY_PATH` has the correct path to the installed library. If the shared"
            " library is present on the system under a different name than one of those listed"
            " above, please open a GitHub issue.",
            "dependency_error",
        ),
        # github.com/chelsea0x3b/cudarc/issues/512: cudarc 0.18.2 on Windows with CUDA 13.1
        (
            "Expected symbol in library: GetProcAddress { source: Os { code: 127, kind:"
            ' Uncategorized, message: "The specified procedure could not be found." } }',
            "cuda_driver_mismatch",
        ),
    ],
)
def test_a_real_candle_line_gets_its_class(matcher: Matcher, text: str, failure_class: str) -> None:
    assert_catalog_reads(matcher, text, FAMILY, failure_class)


@pytest.mark.parametrize(
    ("text", "signature_family", "failure_class"),
    [
        # github.com/huggingface/candle/issues/2237: candle's kernels (PTX from a CUDA 12.5 nvcc)
        # on an older driver; the hand-written CUDA signature reads the code
        (
            'Error: DriverError(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "the provided PTX was'
            ' compiled with an unsupported toolchain.") when loading cast_u32_f32',
            "cuda",
            "cuda_driver_mismatch",
        ),
        # github.com/chelsea0x3b/cudarc/issues/422: on Linux the same panic names the symbol,
        # missing from the driver's own libcuda (a driver older than the API cudarc binds)
        (
            'Expected symbol in library: DlSym { desc: "/lib/x86_64-linux-gnu/libcuda.so:'
            ' undefined symbol: cuLogsCurrent" }',
            "cuda",
            "cuda_driver_mismatch",
        ),
    ],
)
def test_a_code_another_signature_knows_stays_its(
    matcher: Matcher, text: str, signature_family: str, failure_class: str
) -> None:
    [top] = matcher.scan_text(text)
    assert (top.signature.family, top.signature.failure_class) == (
        signature_family,
        failure_class,
    )


def test_cudarc_result_codes_the_nvidia_catalogs_read_generate_nothing_here() -> None:
    accounting = json.loads((RULES / FAMILY / "CATALOG.json").read_text())
    by_text = {m["text"]: m for m in accounting["messages"]}
    oom = by_text['DriverError(CUDA_ERROR_OUT_OF_MEMORY, "{}")']
    assert (oom["disposition"], oom["signature"]) == ("mapped", "cuda.error_out_of_memory")
    invalid = by_text['DriverError(CUDA_ERROR_INVALID_VALUE, "{}")']
    assert invalid["signature"].startswith("cuda_driver_cat.")
    # cuBLAS's statuses without the hand-written signatures' "when calling" are candle's own
    assert by_text["CublasError(CUBLAS_STATUS_EXECUTION_FAILED)"]["signature"].startswith(
        FAMILY + "."
    )
    assert by_text["NcclError"]["disposition"] == "excluded"


def test_the_mapping_keeps_a_low_default_and_leaves_out_metal() -> None:
    decision = decide("candle", "something went wrong in {op}", "Error", "candle-core/src/x.rs")
    assert decision.failure_class == "python_exception"
    assert decision.confidence is not None and decision.confidence <= 0.35
    assert decide("candle", "Metal error {0}", "Error", "candle-core/src/error.rs").disposition == (
        "excluded"
    )
    success = decide("candle", "CublasError(CUBLAS_STATUS_SUCCESS)", "CublasError", "x.rs")
    assert success.disposition == "excluded"


def test_the_catalog_reads_every_pinned_line() -> None:
    pinned = pinned_lines(FAMILY)
    assert [line for line, _ in pinned] == ["0.8", "0.9", "0.11"]
    assert all(signatures > 0 for _, signatures in pinned)


def test_the_extractor_reads_candle_and_cudarc_as_they_print(tmp_path: Path) -> None:
    write_source(
        tmp_path,
        "candle-core/src/error.rs",
        "#[derive(thiserror::Error)]\n"
        "pub enum Error {\n"
        '    #[error("unexpected rank, expected: {expected}, got: {got} ({shape:?})")]\n'
        "    UnexpectedNumberOfDims { expected: usize, got: usize, shape: Shape },\n"
        '    #[error("{0}")]\n'
        "    Msg(String),\n"
        "}\n",
    )
    write_source(
        tmp_path,
        "candle-core/src/cuda_backend/error.rs",
        "pub enum CudaError {\n"
        "    #[error(\"internal error '{0}'\")]\n"
        "    InternalError(&'static str),\n"
        "}\n",
    )
    write_source(
        tmp_path,
        "candle-core/src/cuda_backend/mod.rs",
        "fn matmul() {\n"
        '    _ => Err(CudaError::InternalError("dtype mismatch in matmul op"))?,\n'
        "}\n"
        "fn load() {\n"
        '    /// bail!("a doc example")\n'
        '    crate::bail!("no cuda kernel for {op}")\n'
        "}\n"
        "fn metal_fwd() {\n"
        '    candle::bail!("not on this back end")\n'
        "}\n"
        "#[cfg(test)]\n"
        "mod tests {\n"
        '    fn t() { panic!("a test") }\n'
        "}\n",
    )
    write_source(
        tmp_path,
        "candle-nn/src/var_builder.rs",
        'fn get() {\n    Error::Msg(format!("Cannot slice tensor {path} along dim {dim}"))\n}\n',
    )
    write_source(
        tmp_path,
        "candle-transformers/src/models/llama.rs",
        'fn f() { candle::bail!("a per-model check") }\n',
    )
    write_source(
        tmp_path,
        "cudarc/src/driver/sys/mod.rs",
        '#[cfg(any(feature = "cuda-12080"))]\n'
        "pub enum cudaError_enum {\n"
        "    CUDA_SUCCESS = 0,\n"
        "    CUDA_ERROR_OUT_OF_MEMORY = 2,\n"
        "}\n"
        "fn from_library() {\n"
        '    a.expect("Expected symbol in library");\n'
        '    b.expect("Expected symbol in library");\n'
        "}\n",
    )
    write_source(
        tmp_path,
        "cudarc/src/nccl/result.rs",
        "impl std::fmt::Debug for NcclError {\n"
        "    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {\n"
        '        write!(f, "NcclError")\n'
        "    }\n"
        "}\n",
    )
    write_source(
        tmp_path,
        "cudarc/build.rs",
        "fn main() {\n"
        '    v => panic!("Unsupported cuda toolkit version: `{v}`. Please raise a github issue.")\n'
        "}\n",
    )
    found = {(m.text, m.level, m.file, m.function) for m in extract(tmp_path, "0.9")}
    assert found == {
        (
            "unexpected rank, expected: {expected}, got: {got} ({shape:?})",
            "Error",
            "candle-core/src/error.rs",
            "Error::UnexpectedNumberOfDims",
        ),
        (
            "internal error '{0}'",
            "Error",
            "candle-core/src/cuda_backend/error.rs",
            "CudaError::InternalError",
        ),
        (
            "internal error 'dtype mismatch in matmul op'",
            "Error",
            "candle-core/src/cuda_backend/mod.rs",
            "matmul",
        ),
        ("no cuda kernel for {op}", "Error", "candle-core/src/cuda_backend/mod.rs", "load"),
        (
            "Cannot slice tensor {path} along dim {dim}",
            "Error",
            "candle-nn/src/var_builder.rs",
            "get",
        ),
        (
            'DriverError(CUDA_SUCCESS, "{}")',
            "DriverError",
            "cudarc/src/driver/sys/mod.rs",
            "CUDA_SUCCESS",
        ),
        (
            'DriverError(CUDA_ERROR_OUT_OF_MEMORY, "{}")',
            "DriverError",
            "cudarc/src/driver/sys/mod.rs",
            "CUDA_ERROR_OUT_OF_MEMORY",
        ),
        ("Expected symbol in library", "panic", "cudarc/src/driver/sys/mod.rs", "from_library"),
        ("NcclError", "NcclError", "cudarc/src/nccl/result.rs", "fmt"),
        (
            "Unsupported cuda toolkit version: `{v}`. Please raise a github issue.",
            "panic",
            "cudarc/build.rs",
            "main",
        ),
    }
