"""FBGEMM_GPU's failure messages (github.com/pytorch/FBGEMM, the `fbgemm_gpu/` folder), from the
source of a pinned release (see source.yaml).

FBGEMM_GPU is the operator library under TorchRec: the table-batched embedding (TBE) kernels
(`SplitTableBatchedEmbeddingBagsCodegen`, their forward/backward and optimizers generated from
`codegen/`), the embedding caches (LRU/LFU in HBM over UVM, the SSD and DRAM key-value caches),
jagged-tensor and sparse ops (permute, bucketize, jagged_to_padded_dense, ...), quantization ops
and UVM memory utilities.

- C++ / CUDA (`src/`, `include/fbgemm_gpu/`, `codegen/`): `TORCH_CHECK(cond, ...)` (a Python
  caller sees `RuntimeError: <text>`), `TORCH_CHECK_VALUE` (`ValueError`), `TORCH_SYM_CHECK`
  (symbolic shapes under torch.compile; a `RuntimeError` too) and `TORCH_WARN_ONCE`, read with
  `catalogs/cppsource.py`: streamed pieces that are not literals become `{}` (style `brace`).
  The TBE kernels under `codegen/` are Jinja templates, one source per optimizer and kernel
  variant: a `{{ optimizer }}` in a text is a value the generator fills in, read as `{}`.
  FBGEMM's tensor-check shorthands (`TENSOR_ON_CUDA_GPU(x)`, `TENSORS_ON_SAME_DEVICE(x, y)`,
  `TENSOR_NDIM_EQUALS(t, n)`, ...) are macros whose bodies are such checks, the stringized
  arguments joined to the literals (`"Tensor '" #ten "' must have " #dims " dimension(s). "`):
  each is read once, at its definition, with every stringized argument a `{}` (the tensor name
  each call site prints). The shared reader takes a stringized parameter only at the start of
  a piece, so before reading, each `#param` outside string literals and preprocessor directives
  is made a piece of its own (`"Tensor '", ten, "' must have ", dims, " dimension(s). "`).
  The checks that all tensors sit on one GPU or share a scalar type build their text in a
  string (`std::string msg = "Not all tensors were on the same GPU: "`, then `msg.append(...)`)
  that a TORCH_CHECK prints: the literal assigned to that variable and the first sentence
  appended to it are read as the message, the appended values as placeholders.
  `TORCH_CHECK_EQ` and the other comparison checks print "Check failed: a == b" with no text
  of FBGEMM's own.
  The kernels' `printf(...)` (read with `catalogs/core/csource.py`, level `PRINTF`) reach the
  job's stdout bare: the bounds check's "EmbeddingBoundsCheck: (at least one) Out of bounds
  access for batch: ..." (an index beyond its table's rows, set to zero in WARNING mode) and the
  tensor accessors' report printed right before their kernel assertion. The kernel assertions
  themselves (`CUDA_KERNEL_ASSERT(cond && "text")`) print CUDA's "Assertion `...` failed."
  line, which the hand-written device-assert signatures read, and are not read here.
- Python (`fbgemm_gpu/fbgemm_gpu/`), read with `ast` (`catalogs/python_messages.py`): the TBE
  modules (`split_table_batched_embeddings_ops_training.py`, `..._inference.py`, `..._common.py`,
  `tbe/`), the SSD TBE, the sparse-op and permute modules, UVM and the library loader
  (`__init__.py`: "Could not load the library '<name>.so'!").

Left out: `experimental/` (GenAI GEMMs, not part of the recommendation stack), tests, benchmarks
and their helpers (`tbe/bench`, the synthetic request generator `tbe/utils/requests.py`, the
benchmark reporters and their file store), documentation strings (`docs/`), the Triton and SLL
research kernels. The C++ files are read
from the `fbgemm_gpu/` tree only; FBGEMM's CPU GEMM library at the repository root is not.
Nothing here decides a class: mapping.yaml does.
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core import Message
from catalogs.core.csource import find_calls
from catalogs.cppsource import _blank_comments, _enclosing_function, macro_messages, source_files
from catalogs.python_messages import extract_python, release_root

EMITTER = "fbgemm_gpu"
ROOT = "fbgemm_gpu/"
CPP_ROOTS = ("fbgemm_gpu/src", "fbgemm_gpu/include", "fbgemm_gpu/codegen")
CPP_SUFFIXES = {".cpp", ".cu", ".cuh", ".h", ".hpp", ".cc"}
CPP_SKIP = ("fbgemm_gpu/codegen/genscript/",)
# each macro -> how many leading arguments (the condition) are not part of the text
MACROS = {
    "TORCH_CHECK": 1,
    "TORCH_CHECK_VALUE": 1,
    "TORCH_CHECK_NOT_IMPLEMENTED": 1,
    "TORCH_SYM_CHECK": 1,
    "TORCH_WARN_ONCE": 0,
    "TORCH_WARN": 0,
}
# what a Python caller sees each macro's failure as
LEVELS = {
    "TORCH_CHECK": "RuntimeError",
    "TORCH_SYM_CHECK": "RuntimeError",
    "TORCH_CHECK_VALUE": "ValueError",
    "TORCH_CHECK_NOT_IMPLEMENTED": "NotImplementedError",
    "TORCH_WARN_ONCE": "TORCH_WARN",
    "TORCH_WARN": "TORCH_WARN",
}
# device-side printf: what a kernel prints to the job's stdout (the bounds check in WARNING mode,
# the tensor accessors right before their kernel assertion)
PRINTF_SUFFIXES = {".cu", ".cuh", ".h"}
# the TBE kernels are Jinja templates: `{{ optimizer }}` is a value the generator fills in
TEMPLATES = "fbgemm_gpu/codegen/"
JINJA = re.compile(r"\{\{.*?\}\}")
# a message built in a string that a TORCH_CHECK prints (the same-GPU and scalar-type checks of
# tensor_utils.h): its opening literal, and the first statement-long literal appended after it
BUILT = re.compile(r'std::string\s+msg\s*=\s*"((?:[^"\\\n]|\\.)*)"\s*;')
APPENDED = re.compile(r'msg\.append\(\s*"((?:[^"\\\n]|\\.)*)"\s*\)')
BUILT_END = re.compile(r"return\s+msg\s*;")
WORD = re.compile(r"[A-Za-z]{3,}")
HELPER = re.compile(r"std::string\s+(\w+)\s*\(")
# a `#define NAME(...)` line and the lines its trailing backslashes continue it onto
DEFINE = re.compile(r"^\s*#\s*define\s+(\w+)")
BUILT_FILES = (
    "fbgemm_gpu/include/fbgemm_gpu/utils/tensor_utils.h",
    "fbgemm_gpu/include/fbgemm_gpu/sparse_ops_utils.h",
)

PY_INCLUDE = (ROOT + "fbgemm_gpu/",)
PY_EXCLUDE = tuple(
    ROOT + "fbgemm_gpu/" + p
    for p in (
        "docs/",
        "bench/",
        "tbe/bench/",
        "tbe/utils/requests.py",
        "tbe/monitoring/bench_params_reporter.py",
        "utils/filestore.py",
        "sll/",
        "triton/",
        "experimental/",
        "_fbgemm_gpu_docs.py",
    )
)
# the TBE modules check what their callers passed (tables, optimizers, cache settings) with asserts
ASSERT_PATHS = (
    ROOT + "fbgemm_gpu/split_table_batched_embeddings_ops",
    ROOT + "fbgemm_gpu/ssd_split_table_batched_embeddings_ops.py",
    ROOT + "fbgemm_gpu/tbe/ssd/training.py",
)


_LITERAL_OR_STRINGIZED = re.compile(
    r'"(?:[^"\\\n]|\\.)*"'
    r"|'(?:[^'\\\n]|\\.)'"
    r"|(?<![#\w])#\s*(?!(?:define|include|if|ifdef|ifndef|else|elif|endif|pragma|undef|error|warning)\b)([A-Za-z_]\w*)"
    r"|(\\\n)"
)


def _split_stringized(src: str) -> str:
    """`#x " must be contiguous"` -> `, x, " must be contiguous"`: each stringized macro parameter
    outside string literals a streamed piece of its own (an expression: `{}`), and the macro
    body's line continuations blanks, so that they make no piece; lines kept."""

    def piece(m: re.Match[str]) -> str:
        if m.group(2):
            return " \n"
        return m.group() if m.group(1) is None else f", {m.group(1)},"

    return _LITERAL_OR_STRINGIZED.sub(piece, src)


def _cpp_checks(checkout: Path, release: str) -> list[Message]:
    root = release_root(checkout, release)
    found: list[Message] = []
    for path, rel in source_files(root, CPP_SUFFIXES, CPP_SKIP, CPP_ROOTS):
        src = path.read_text(encoding="utf-8", errors="replace")
        macros = _macro_names(src)
        for m in macro_messages(_split_stringized(src), MACROS):
            level = LEVELS[m.level]
            function = macros.get(m.line, m.function)  # a check macro's body: the macro
            text, style = m.text, m.style
            if rel.startswith(TEMPLATES) and JINJA.search(text):
                # a value the code generator fills in per optimizer or kernel variant
                text, style = JINJA.sub("{}", text), "brace"
            found.append(Message(EMITTER, release, text, style, rel, m.line, level, function))  # type: ignore[arg-type]
        if path.suffix in PRINTF_SUFFIXES:
            for call in find_calls(src, ("printf",)):
                if call.args and call.args[0]:
                    text = call.args[0]
                    if rel.startswith(TEMPLATES):
                        text = JINJA.sub("%s", text)
                    found.append(
                        Message(EMITTER, release, text, "printf", rel, call.line, "PRINTF", "")
                    )
        if rel in BUILT_FILES:
            found += _built_messages(src, rel, release)
    return found


def _built_messages(src: str, rel: str, release: str) -> list[Message]:
    """`std::string msg = "Tensor's scalar type ("; msg.append(...); msg.append(") did not
    match any one of the following types: [");` -> "Tensor's scalar type ({}) did not match any
    one of the following types: [{}": the opening literal, then the first appended literal of
    three words or more (the separators appended in loops are left to the placeholders)."""
    clean = _blank_comments(src)
    out: list[Message] = []
    for b in BUILT.finditer(clean):
        end = BUILT_END.search(clean, b.end())
        body = clean[b.end() : end.start() if end else len(clean)]
        text = b.group(1) + "{}"  # the values appended after the opening
        for appended in APPENDED.finditer(body):
            if len(WORD.findall(appended.group(1))) >= 3:
                text += appended.group(1) + "{}"
                break
        line = clean.count("\n", 0, b.start()) + 1
        helpers = list(HELPER.finditer(clean, 0, b.start()))  # the helper that returns msg
        function = helpers[-1].group(1) if helpers else _enclosing_function(clean, b.start())
        out.append(Message(EMITTER, release, text, "brace", rel, line, "RuntimeError", function))
    return out


def _macro_names(src: str) -> dict[int, str]:
    """Line number -> the name of the `#define` whose body holds that line."""
    names: dict[int, str] = {}
    current = ""
    for number, text in enumerate(src.split("\n"), start=1):
        if not current:
            define = DEFINE.match(text)
            current = define.group(1) if define else ""
        if current:
            names[number] = current
            if not text.rstrip().endswith("\\"):
                current = ""
    return names


def extract(checkout: Path, release: str) -> list[Message]:
    python = extract_python(checkout, release, EMITTER, PY_INCLUDE, PY_EXCLUDE, ASSERT_PATHS)
    return python + _cpp_checks(checkout, release)
