"""Real lines Triton printed in failed runs meet the signatures generated from its source
(catalogs/triton), and its reviewed mapping decides messages as a reviewer would.

Every line below is copied from the public thread named beside it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from catalogs.triton.extract import _exception_texts, extract
from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_mapped, catalog_hits

FAMILY = "triton_cat"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/Yuliang-Liu/MonkeyOCR/issues/86 (Triton 3.x, raised in _init_handles)
        (
            "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required:"
            " 126978, Hardware limit: 101376. Reducing block sizes or `num_stages` may help.",
            "unsupported_gpu_arch",
        ),
        # github.com/state-spaces/mamba/issues/387 (Triton 2.x: the class imported through the
        # autotuner module)
        (
            "triton.runtime.autotuner.OutOfResources: out of resource: shared memory, Required:"
            " 663808, Hardware limit: 101376. Reducing block sizes or `num_stages` may help.",
            "unsupported_gpu_arch",
        ),
        # github.com/triton-lang/triton/issues/8539 (DGX Spark, sm_121a; the post cut the
        # line's first letter)
        (
            "riton.runtime.errors.PTXASError: PTXAS error: Internal Triton PTX codegen error",
            "cuda_driver_mismatch",
        ),
        # github.com/mlcommons/training/pull/826 (B200 with Triton 3.1's ptxas)
        (
            "0000-steps/0 [default6]:[rank6]: RuntimeError: Internal Triton PTX codegen error:",
            "cuda_driver_mismatch",
        ),
        # vLLM with tensor parallel 4 (the line rules/python/uncaught_exception.yaml carried as an
        # example of a logger header; the catalog's signature now outranks that fallback on it)
        (
            "(VllmWorker rank=2 pid=2307184) ERROR 02-17 14:48:01 multiproc_executor.py:374]"
            " ValueError: Pointer argument (at 0) cannot be accessed from Triton (cpu tensor?)",
            "shape_or_dtype_error",
        ),
        # github.com/pytorch/torchtitan/issues/1225 (B200, a Triton all-to-all kernel)
        (
            "[rank3]: ValueError: Pointer argument (at 0) cannot be accessed from Triton (cpu"
            " tensor?)",
            "shape_or_dtype_error",
        ),
        # vLLM serving an FP8 model on an Ampere GPU (its w8a8 block-scaled matmul kernel): the
        # CompilationError's last line, the language's error as its repr (triton/language/core.py)
        (
            '(EngineCore pid=34474) ERROR 04-12 01:50:23 [core.py:1110] ValueError("type fp8e4nv'
            " not supported in this architecture. The supported fp8 dtypes are ('fp8e4b15',"
            " 'fp8e5')\")', please check the stack trace above for the root cause",
            "unsupported_gpu_arch",
        ),
    ],
)
def test_a_real_triton_line_gets_its_class(matcher: Matcher, text: str, failure_class: str) -> None:
    hits = catalog_hits(matcher, text, FAMILY)
    assert hits, f"no {FAMILY} signature matched"
    assert failure_class in {m.signature.failure_class for m in hits}
    # the line reports the catalog's signature, not the generic uncaught-exception fallback
    assert "python.uncaught_exception" not in {m.signature.id for m in matcher.scan_text(text)}


def test_a_cuda_error_from_a_triton_launch_is_read_by_the_cuda_signatures(
    matcher: Matcher,
) -> None:
    # the driver's string after Triton's prefix (triton/backends/nvidia/driver.c gpuAssert): the
    # catalog's signature is a symptom, the CUDA signature names the failure
    text = "RuntimeError: Triton Error [CUDA]: an illegal memory access was encountered"
    assert catalog_hits(matcher, text, FAMILY)
    assert "illegal_memory_access" in {m.signature.failure_class for m in matcher.scan_text(text)}


@pytest.mark.parametrize(
    ("text", "level", "file", "failure_class"),
    [
        # 3.5.1 triton/runtime/build.py
        (
            "Failed to find C compiler. Please specify via CC environment variable or set"
            " triton.knobs.build.impl.",
            "RuntimeError",
            "triton/runtime/build.py",
            "dependency_error",
        ),
        # 3.3.1 triton/runtime/cache.py
        (
            "Could not create or locate cache dir",
            "RuntimeError",
            "triton/runtime/cache.py",
            "filesystem_permission",
        ),
        # 3.1.0 triton/backends/nvidia/driver.c
        (
            "Failed to open libcuda.so.1",
            "RuntimeError",
            "triton/backends/nvidia/driver.c",
            "dependency_error",
        ),
        # 2.3.1 triton/language/semantic.py: the GPU lacks the fp8 type
        (
            "Dot op does not support fp8e4nv on CUDA arch < 90",
            "AssertionError",
            "triton/language/semantic.py",
            "unsupported_gpu_arch",
        ),
        # 3.5.1 triton/language/semantic.py: a block size that is not a power of two
        (
            "arange's range must be a power of 2",
            "ValueError",
            "triton/language/semantic.py",
            "shape_or_dtype_error",
        ),
        # 3.5.1 triton/language/semantic.py: the kernel's code, not a setting of the run
        (
            "arange's arguments must be of type tl.constexpr",
            "ValueError",
            "triton/language/semantic.py",
            "python_exception",
        ),
    ],
)
def test_the_mapping_gives_a_mechanism_its_class(
    text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped("triton", text, level, file, failure_class)


def test_an_exception_class_prints_what_its_str_returns() -> None:
    tree = ast.parse(
        "class OutOfResources(TritonError):\n"
        "    def __init__(self, required, limit, name):\n"
        "        self.name = name\n"
        "    def __str__(self) -> str:\n"
        '        return f"out of resource: {self.name}, Required: {self.required}"\n'
        "class Old(Exception):\n"
        "    def __init__(self, required, limit, name):\n"
        '        self.message = f"out of resource: {name}"\n'
        '        self.message += ". Reducing block sizes may help."\n'
    )
    found = {(text, level) for text, _, _, level in _exception_texts(tree, "triton.runtime.errors")}
    assert found == {
        (
            "out of resource: {self.name}, Required: {self.required}",
            "triton.runtime.errors.OutOfResources",
        ),
        ("out of resource: {name}. Reducing block sizes may help.", "triton.runtime.errors.Old"),
    }


def test_the_drivers_c_raises_are_read_with_their_exception(tmp_path: Path) -> None:
    source = tmp_path / "triton" / "backends" / "nvidia" / "driver.c"
    source.parent.mkdir(parents=True)
    source.write_text(
        "static bool gpuAssert(CUresult code) {\n"
        '  const char *prefix = "Triton Error [CUDA]: ";\n'
        "}\n"
        "static PyObject *f() {\n"
        "    PyErr_Format(PyExc_ValueError,\n"
        '        "Pointer argument (at %d) cannot be accessed from Triton (cpu tensor?)",\n'
        "        idx);\n"
        "}\n"
    )
    found = {(m.level, m.text, m.style) for m in extract(tmp_path, "3.3.1")}
    assert found == {
        ("RuntimeError", "Triton Error [CUDA]: %s", "printf"),
        (
            "ValueError",
            "Pointer argument (at %d) cannot be accessed from Triton (cpu tensor?)",
            "printf",
        ),
    }


def test_the_languages_checks_are_read_asserts_included(tmp_path: Path) -> None:
    # the language's asserts are its checks of the kernel, read even where their words state no
    # requirement (triton/language, as the runtime and the back ends)
    source = tmp_path / "triton" / "language" / "semantic.py"
    source.parent.mkdir(parents=True)
    source.write_text(
        "def dot(lhs, rhs, options):\n"
        "    if not options.allow_fp8e4nv:\n"
        "        assert not lhs.is_fp8e4nv(), 'Dot op does not support fp8e4nv on CUDA arch < 90'\n"
        "def to_ir(self, builder):\n"
        "    raise ValueError(f'type {self} not supported in this architecture. '\n"
        "                     f'The supported fp8 dtypes are {builder.options.fp8}')\n"
    )
    found = {(m.level, m.text) for m in extract(tmp_path, "3.3.1")}
    assert found == {
        ("AssertionError", "Dot op does not support fp8e4nv on CUDA arch < 90"),
        (
            "ValueError",
            "type {self} not supported in this architecture. The supported fp8 dtypes are"
            " {builder.options.fp8}",
        ),
    }
