"""Real lines PyTorch's compiler stack (torch.compile: Dynamo, AOTAutograd, Inductor, torch.export)
printed in failed runs meet the signatures generated from its source (catalogs/pytorch_compile),
its reviewed mapping decides messages as a reviewer would, and its extractor reads the shapes the
shared Python reader does not (graph breaks, UserErrors, exception classes' own texts, raises
through a helper, the CUDA graph trees' storage error).

Every real line below is copied from the public thread named beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from catalogs.pytorch_compile.extract import extract
from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_catalog_reads, assert_mapped, catalog_hits, decide

FAMILY = "pytorch_compile_cat"
RULES = Path(__file__).resolve().parents[2] / "rules"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/kijai/ComfyUI-WanVideoWrapper/issues/978 (2.7's TritonMissing)
        (
            "torch._inductor.exc.TritonMissing: Cannot find a working triton installation. Either"
            " the package is not installed or it is too old. More information on installing"
            " Triton can be found at: https://github.com/triton-lang/triton",
            "dependency_error",
        ),
        # github.com/karpathy/nanoGPT/issues/157 (a GTX 1080, compute capability 6.1)
        (
            "RuntimeError: Found NVIDIA GeForce GTX 1080 which is too old to be supported by the"
            " triton GPU compiler, which is used as the backend. Triton only supports devices of"
            " CUDA Capability >= 7.0, but your device is of CUDA capability 6.1",
            "unsupported_gpu_arch",
        ),
        # github.com/pytorch/pytorch/issues/106513 (2.x: the inner error on its own line)
        ("CppCompileError: C++ compile error", "dependency_error"),
        # the same thread: the line before it, which says only that the backend failed
        (
            "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:",
            "framework_config_error",
        ),
        # github.com/pytorch/pytorch/issues/155426 (a graph break under fullgraph)
        (
            "torch._dynamo.exc.Unsupported: Attempted to call function marked as skipped",
            "framework_config_error",
        ),
        # github.com/pytorch/pytorch/pull/135120 (a parallel compile worker died)
        (
            "RuntimeError: A compilation subprocess exited unexpectedly. This is likely due to a"
            " crash. To facilitate debugging, you can re-run with TORCHINDUCTOR_COMPILE_THREADS=1"
            " to cause compilation to occur in the main process.",
            "native_crash",
        ),
        # github.com/pytorch/pytorch/issues/170604 (mode="reduce-overhead")
        (
            "RuntimeError: Error: accessing tensor output of CUDAGraphs that has been overwritten"
            ' by a subsequent run. Stack trace: File ".../bug.py", line 7, in my_model',
            "python_exception",
        ),
        # github.com/tenstorrent/tt-xla/issues/2756 (the model's own op failing on fake tensors)
        (
            "torch._dynamo.exc.TorchRuntimeError: Dynamo failed to run FX node with fake tensors:"
            " call_function <Wrapped method <original div>>(*(FakeTensor(..., size=(),"
            " dtype=torch.float64), 3.141592653589793), **{}): got AttributeError(\"'ndarray'"
            " object has no attribute 'div'\")",
            "python_exception",
        ),
    ],
)
def test_a_real_compile_line_gets_its_class(
    matcher: Matcher, text: str, failure_class: str
) -> None:
    assert_catalog_reads(matcher, text, FAMILY, failure_class)


def test_the_recompile_limit_warning_is_a_note_not_a_failure(matcher: Matcher) -> None:
    # github.com/pytorch/torchdynamo/issues/1955: the frame runs in eager from then on
    text = (
        "[2022-12-22 03:54:03,390] torch._dynamo.convert_frame: [WARNING] torch._dynamo hit"
        " config.cache_size_limit (64)"
    )
    assert not catalog_hits(matcher, text, FAMILY)


def test_a_healthy_compile_note_is_not_matched(matcher: Matcher) -> None:
    # Inductor falling back to ATen for a GEMM on its own (torch/_inductor/kernel/mm_common.py)
    text = (
        "[rank0]:W1201 03:12:07.412000 1359 torch/_inductor/kernel/mm_common.py:441] [0/0] No"
        " choices for GEMM, using ATen backend as fallback"
    )
    assert not catalog_hits(matcher, text, FAMILY)


@pytest.mark.parametrize(
    ("text", "level", "file", "failure_class"),
    [
        # 2.13 torch/_inductor/exc.py: the C++ toolchain is missing
        (
            "No working C++ compiler found in {config.__name__}.cpp.cxx: {config.cpp.cxx}",
            "InvalidCxxCompiler",
            "torch/_inductor/exc.py",
            "dependency_error",
        ),
        # 2.13 torch/_inductor/codecache.py: kernels cannot be loaded from a noexec tmp
        (
            "{e}.  The most common reason this may occur is if the {tempfile.gettempdir()} folder"
            " is mounted with noexec (e.g., by default Docker mounts tmp file systems as noexec).",
            "OSError",
            "torch/_inductor/codecache.py",
            "filesystem_permission",
        ),
        # 2.7 torch/_dynamo/eval_frame.py: a Python newer than the release supports
        (
            "Python 3.14+ not yet supported for torch.compile",
            "RuntimeError",
            "torch/_dynamo/eval_frame.py",
            "dependency_error",
        ),
        # 2.7 torch/_inductor/runtime/triton_heuristics.py: autotuning found no config that fits
        (
            "No valid triton configs. {type(exc).__name__}: {exc}",
            "RuntimeError",
            "torch/_inductor/runtime/triton_heuristics.py",
            "unsupported_gpu_arch",
        ),
        # 2.13 torch/_dynamo/convert_frame.py: an option made the recompile limit an error
        (
            "Hard failure due to fullgraph=True",
            "FailOnRecompileLimitHit",
            "torch/_dynamo/convert_frame.py",
            "framework_config_error",
        ),
        # 2.13 torch/_inductor/select_algorithm.py: distributed autotuning waited on a rank
        (
            "All-reduce timeout when collecting benchmark results",
            "TimeoutError",
            "torch/_inductor/select_algorithm.py",
            "collective_timeout",
        ),
        # 2.13: an internal check says nothing about the cause
        (
            "expected TensorBox, got {type(x)}",
            "AssertionError",
            "torch/_inductor/lowering.py",
            "unknown",
        ),
    ],
)
def test_the_mapping_gives_a_mechanism_its_class(
    text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped("pytorch_compile", text, level, file, failure_class)


def test_notes_and_self_caught_exceptions_make_no_signature() -> None:
    note = "torch._dynamo hit config.%s (%s)\n   function: %s\n   last reason: %s"
    where = "torch/_dynamo/convert_frame.py"
    assert decide("pytorch_compile", note, "WARNING", where).disposition == "context"
    bypass = decide(
        "pytorch_compile",
        "Cannot cache a graph with freezing enabled",
        "BypassAOTAutogradCache",
        "torch/_functorch/_aot_autograd/autograd_cache.py",
    )
    assert bypass.disposition == "excluded"


def test_the_extractor_reads_each_way_the_compiler_reports(tmp_path: Path) -> None:
    dynamo = tmp_path / "torch" / "_dynamo"
    dynamo.mkdir(parents=True)
    (dynamo / "breaks.py").write_text(
        "def old(self):\n"
        '    unimplemented(f"call_function {self} in skip_files")\n'
        "def new(self):\n"
        "    unimplemented(\n"
        '        gb_type="Attempted to call function marked as skipped",\n'
        '        context=f"module: {module}",\n'
        '        explanation=f"Dynamo developers have intentionally marked `{name}`.",\n'
        '        hints=["Avoid calling it."],\n'
        "    )\n"
        "def export(x):\n"
        '    raise UserError(UserErrorType.DYNAMIC_CONTROL_FLOW, "Dynamic control flow is not'
        ' supported")\n'
        "def run_node(node):\n"
        "    def make_error_message(e):\n"
        '        return f"Failed running {node.op}: " + str(e)\n'
        "    try:\n"
        "        pass\n"
        "    except Exception as e:\n"
        "        raise RuntimeError(make_error_message(e)).with_traceback(e.__traceback__)\n"
    )
    inductor = tmp_path / "torch" / "_inductor"
    inductor.mkdir(parents=True)
    (inductor / "exc.py").write_text(
        "import textwrap\n"
        "class InvalidCxxCompiler(RuntimeError):\n"
        "    def __init__(self, compiler=None):\n"
        "        if compiler is None:\n"
        '            msg = "No working C++ compiler found"\n'
        "        else:\n"
        '            msg = f"Compiler: {compiler} is not found."\n'
        "        super().__init__(msg)\n"
        "class CppCompileError(RuntimeError):\n"
        "    def __init__(self, cmd, output):\n"
        "        super().__init__(\n"
        '            textwrap.dedent("""\n'
        "                C++ compile error\n"
        "\n"
        "                Output:\n"
        "                {output}\n"
        '            """).strip().format(output=output)\n'
        "        )\n"
        "def warn_only():\n"
        '    log.warning("No choices for GEMM, using ATen backend as fallback")\n'
    )
    (inductor / "cudagraph_trees.py").write_text(
        "def free(ten, stack_trace):\n"
        "    msg = (\n"
        '        "Error: accessing tensor output of CUDAGraphs that has been overwritten. "\n'
        '        f"Stack trace: {stack_trace}."\n'
        "    )\n"
        "    torch._C._set_storage_access_error_msg(ten, msg)\n"
    )
    found = {(m.level, m.text, m.style) for m in extract(tmp_path, "2.13")}
    assert found == {
        ("Unsupported", "call_function {self} in skip_files", "fstring"),
        ("Unsupported", "Attempted to call function marked as skipped", "literal"),
        ("Explanation", "Dynamo developers have intentionally marked `{name}`.", "fstring"),
        ("UserError", "Dynamic control flow is not supported", "literal"),
        ("RuntimeError", "Failed running {node.op}: {str(e)}", "fstring"),
        ("InvalidCxxCompiler", "No working C++ compiler found", "literal"),
        ("InvalidCxxCompiler", "Compiler: {compiler} is not found.", "fstring"),
        ("CppCompileError", "C++ compile error\n\nOutput:\n{output}", "brace"),
        ("WARNING", "No choices for GEMM, using ATen backend as fallback", "literal"),
        (
            "RuntimeError",
            "Error: accessing tensor output of CUDAGraphs that has been overwritten. Stack trace:"
            " {stack_trace}.",
            "fstring",
        ),
    }


def test_the_catalog_reads_the_three_release_lines() -> None:
    accounting = json.loads((RULES / FAMILY / "CATALOG.json").read_text())
    assert [row["line"] for row in accounting["releases"]] == ["2.4", "2.7", "2.13"]
    assert all(row["found"] > 0 for row in accounting["releases"])
