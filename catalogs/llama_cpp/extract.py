"""llama.cpp's and ggml's failure messages, from the source of a pinned release (see
source.yaml).

llama.cpp (libllama, src/; a single llama.cpp before mid-2024), the ggml library it runs on
(ggml/src/ and its back ends; the ggml*.c/.cu/.m files at the top before mid-2024), the common
helpers every tool links (common/) and llama-server (tools/server/; examples/server/ before
mid-2025) print their failures in these forms, read here:

- `LLAMA_LOG_ERROR` / `LLAMA_LOG_WARN` / `LLAMA_LOG_INFO`, `GGML_LOG_ERROR` / `GGML_LOG_WARN` /
  `GGML_LOG_INFO`, common/log's `LOG_ERR` / `LOG_WRN` / `LOG_INF` (and `LOG_TEE` before it), and
  `fprintf(stderr, ...)`: a printf format printed as it is. Most begin with `"%s: "` and pass
  `__func__`, so the line starts with the function's name (`llama_kv_cache_init: failed to
  allocate buffer for kv cache`): that prefix is taken off the text (it differs between releases
  and says nothing about the failure) and the enclosing function kept as the message's
  function, at the level `ERROR` / `WARN` / `INFO` / `STDERR` (whose line_template puts
  `{function}: ` back in front); a message without it has the level `ERROR bare` and so on.
  Info lines and stderr lines are read only where they report a failure (the model loader's
  metadata dump and the device listings are not failures).
- llama-server's `SRV_ERR` / `SLT_ERR` / `QUE_ERR` (and their WRN / INF forms), which print
  `srv  %12.*s: `, `slot %12.*s: id %2d | task %d | ` or `que  %12.*s: ` before the format
  (level: the macro's name); the 2024 server's JSON records `LOG_ERROR("msg", {...})` /
  `LOG_WARNING(...)` (level `SERVER ERR` / `SERVER WARN`).
- `GGML_ABORT(fmt, ...)`: ggml_abort prints `<__FILE__>:<line>: ` and the format, then a
  backtrace, and aborts (level `ABORT`). `GGML_ASSERT(cond)` is not read one by one: every
  failed assertion prints the same `GGML_ASSERT(%s) failed` (`GGML_ASSERT: file:line: cond`
  before mid-2024), which the hand-written rules/ggml/assertion_failed.yaml reads.
- exceptions thrown with their text: `throw std::runtime_error("..." + x)`,
  `std::runtime_error(format("...", ...))` (llama.cpp's printf-style `format`, common's
  `string_format`), `std::invalid_argument`, `std::out_of_range`. Those thrown by libllama's
  loader (the model, vocabulary, adapters; all of llama.cpp before mid-2024) reach the log
  through `llama_model_load: error loading model: %s` (level `THROW load`), those thrown while
  a context is created through `llama_init_from_model: failed to initialize the context: %s`
  (level `THROW context`); the others are printed by their catcher (level `THROW`). A text
  that begins with `__func__` keeps the function (levels ending in ` func`).
- llama-server's `send_error(slot, "...", type)`: the error returned to the client, logged as
  `send_error: task id = N, error: <text>` (level `SEND_ERROR`).
- the CUDA back end's device-side `printf` (NO_DEVICE_CODE: `ERROR: CUDA kernel %s has no device
  code compatible with CUDA arch %d`), level `PRINTF`.
- std::cerr streams (the Vulkan back end's `ggml_vulkan: Device memory allocation of size ...
  failed.`), level `STDERR bare`.

`GGML_CUDA_NAME` is read as "CUDA" (the HIP and MUSA builds print "ROCm" / "MUSA" there).
Nothing here decides a class: mapping.yaml does.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import replace
from pathlib import Path

from catalogs import csource
from catalogs.core import Message
from catalogs.cppsource import _args, _blank_comments, source_files
from catalogs.cppstreams import _message, _piece, _split_top, bare_stream_messages

EMITTER = "llama_cpp"
SUFFIXES = {".c", ".cpp", ".h", ".hpp", ".cu", ".cuh", ".m", ".mm"}
# what is read: libllama, ggml and its back ends, common/, the server (both layouts)
INCLUDE = (
    "src/",
    "ggml/src/",
    "common/",
    "tools/server/",
    "examples/server/",
    "llama.cpp",
    "ggml.c",
    "ggml-alloc.c",
    "ggml-backend.c",
    "ggml-cuda.cu",
    "ggml-metal.m",
    "ggml-vulkan.cpp",
    "ggml-sycl.cpp",
    "ggml-mpi.c",
)
# vendored code, generated sources, kernels, tests, and back ends for phones, NPUs and browsers
# that no GPU server run reaches; common/'s template, grammar and chat-format parsers
SKIP = (
    "ggml/src/ggml-cuda/template-instances/",
    "ggml/src/ggml-cuda/vendors/",
    "ggml/src/ggml-vulkan/vulkan-shaders/",
    "ggml/src/ggml-kompute/",
    "ggml/src/ggml-opencl/",
    "ggml/src/ggml-hexagon/",
    "ggml/src/ggml-openvino/",
    "ggml/src/ggml-webgpu/",
    "ggml/src/ggml-et/",
    "ggml/src/ggml-virtgpu/",
    "ggml/src/ggml-zdnn/",
    "ggml/src/ggml-zendnn/",
    "ggml/src/ggml-qnn/",
    "ggml/src/ggml-cpu/arch/",
    "ggml/src/ggml-cpu/kleidiai/",
    "ggml/src/ggml-cpu/amx/",
    "ggml/src/ggml-cpu/spacemit/",
    "ggml/src/ggml-cpu/llamafile/",
    "ggml/src/ggml-sycl/dpct/",
    "common/jinja/",
    "common/minja/",
    "common/parsers/",
    "common/chat",
    "common/peg-parser",
    "common/json-schema",
    "common/json-partial",
    "common/json.",
    "common/regex-partial",
    "common/console",
    "common/base64",
    "common/stb_",
    "common/grammar-parser",
    "common/train",
    "common/build-info",
    "tools/server/tests/",
    "tools/server/webui/",
    "tools/server/public",
    "tools/server/bench/",
    "tools/server/httplib",
    "examples/server/tests/",
    "examples/server/public",
    "examples/server/httplib",
    "examples/server/json.hpp",
    "examples/server/index",
    "examples/server/completion.js",
    "examples/server/json-schema-to-grammar",
)
# libllama: an exception thrown while loading is printed by llama_model_load's catch, one thrown
# while creating a context by llama_init_from_model's ("failed to initialize the context: %s")
LOADER_FILES = re.compile(
    r"^(?:llama\.cpp$|src/(?:llama\.cpp$|llama-model|llama-vocab|llama-mmap|llama-arch|"
    r"llama-hparams|llama-adapter|models/))"
)
CONTEXT_FILES = re.compile(
    r"^src/(?:llama-context|llama-kv-cache|llama-memory|llama-graph|llama-batch)"
)
# llama-server's send_error(slot_or_task, "...", type): the error returned to the client, logged
# as "srv    send_error: task id = %d, error: %s"
SERVER_FILES = re.compile(r"^(?:tools|examples)/server/")
CUDA_FILES = re.compile(r"^(?:ggml-cuda\.cu$|ggml/src/ggml-cuda/)")
_SEND_ERROR = re.compile(r"(?<![\w:.>])send_error\s*\(")
# printf-style loggers -> their level (before the function prefix is decided)
LOGGERS = {
    "LLAMA_LOG_ERROR": "ERROR",
    "LLAMA_LOG_WARN": "WARN",
    "LLAMA_LOG_INFO": "INFO",
    "GGML_LOG_ERROR": "ERROR",
    "GGML_LOG_WARN": "WARN",
    "GGML_LOG_INFO": "INFO",
    "LOG_ERR": "ERROR",
    "LOG_WRN": "WARN",
    "LOG_INF": "INFO",
    "LOG_TEE": "INFO",
    "fprintf": "STDERR",
}
SERVER_MACROS = {
    "SRV_ERR": "SRV_ERR",
    "SRV_WRN": "SRV_WRN",
    "SRV_INF": "SRV_INF",
    "SLT_ERR": "SLT_ERR",
    "SLT_WRN": "SLT_WRN",
    "SLT_INF": "SLT_INF",
    "QUE_ERR": "QUE_ERR",
    "QUE_WRN": "QUE_WRN",
    "QUE_INF": "QUE_INF",
}
# the 2024 server's JSON logger (examples/server/utils.hpp): LOG_ERROR("msg", {extra})
SERVER_JSON = {"LOG_ERROR": "SERVER ERR", "LOG_WARNING": "SERVER WARN"}
EXCEPTIONS = ("std::runtime_error", "std::invalid_argument", "std::out_of_range")
FORMATTERS = re.compile(r"^(?:::)?(?:format|string_format|llama_format)\s*\(")
# string macros printed between literals
MACROS = {
    "GGML_CUDA_NAME": "CUDA",
    "GGML_CUBLAS_NAME": "cuBLAS",
    "GGML_SYCL_NAME": "SYCL",
    "GGML_METAL_NAME": "Metal",
    "GGML_VK_NAME": "Vulkan",
    "GGML_RPC_NAME": "RPC",
    "GGML_CANN_NAME": "CANN",
}
# an info or stderr line is a failure report when it says so
FAILURE_WORDS = re.compile(
    r"(?i)fail|error|cannot|can't|couldn't|could not|unable|invalid|not supported|unsupported|"
    r"out of memory|not enough|exceed|mismatch|too (?:large|small|many|long)|corrupt|missing|"
    r"not found|no such|abort|warning|denied|refused|timed? ?out|insufficient|does not fit|"
    r"disabl|fallback|falling back|unknown|bad |wrong"
)
FUNC_ARGS = {"__func__", "__FUNCTION__"}
_FUNCTION_START = re.compile(
    r"(?<![\w:~])((?:[A-Za-z_]\w*::)*~?[A-Za-z_]\w*)\s*\([^;{}()]*(?:\([^;{}()]*\)[^;{}()]*)*\)"
    r"\s*(?:const\s*)?(?:noexcept\s*)?(?:override\s*)?(?:->\s*[\w:<>\*& ]+)?\{"
)
# a constructor defined out of its class (`llama_context::llama_context(...) : ...`)
_CONSTRUCTOR = re.compile(r"(?<![\w:~])((?:\w+::)*(\w+)::\2)\s*\(")
# a member initialised in a constructor's list (`: model(model), cells(n) {`) is no function
_INITIALIZER = re.compile(r"(?:[^:]:|,)\s*$")
_NOT_FUNCTIONS = {"if", "for", "while", "switch", "catch", "return", "sizeof", "defined"}


class _Functions:
    """The enclosing function of an offset, as `__func__` names it (the last `::` part)."""

    def __init__(self, clean: str) -> None:
        ctors = [(m.start(), m.group(2)) for m in _CONSTRUCTOR.finditer(clean)]
        starts = [
            (m.start(), m.group(1).split("::")[-1])
            for m in _FUNCTION_START.finditer(clean)
            if m.group(1).split("::")[-1] not in _NOT_FUNCTIONS
            and not _INITIALIZER.search(clean, max(0, m.start() - 200), m.start())
        ]
        starts = sorted(starts + ctors)
        self._offsets = [offset for offset, _ in starts]
        self._names = [name for _, name in starts]

    def at(self, offset: int) -> str:
        index = bisect.bisect_right(self._offsets, offset) - 1
        return self._names[index] if index >= 0 else ""


def _strip_func(text: str, args: tuple[str, ...], fmt_index: int) -> bool:
    """Whether the format begins with `%s: ` filled by `__func__`."""
    return (
        re.match(r"%s ?: ", text) is not None
        and len(args) > fmt_index + 1
        and args[fmt_index + 1].strip() in FUNC_ARGS
    )


def _fmt_index(args: tuple[str, ...], macros: dict[str, str]) -> int | None:
    for index, arg in enumerate(args):
        if csource.literal_value(arg, macros) is not None:
            return index
    return None


def _printf_messages(rel: str, source: str, macros: dict[str, str]) -> list[Message]:
    found: list[Message] = []
    clean = csource.strip_comments(source)
    functions = _Functions(clean)
    line_starts = [0, *(m.end() for m in re.finditer("\n", clean))]

    def offset_of(line: int) -> int:
        return line_starts[line - 1] if line - 1 < len(line_starts) else 0

    names = [*LOGGERS, *SERVER_MACROS, "GGML_ABORT"]
    if rel.startswith("examples/server/"):
        names += list(SERVER_JSON)
    for call in csource.find_calls(source, names, macros=macros):
        index = _fmt_index(call.args, macros)
        if index is None:
            continue
        text = call.text
        name = call.name
        function = functions.at(offset_of(call.line))
        if name == "fprintf" and (index != 1 or call.args[0].strip() != "stderr"):
            continue
        if name in SERVER_JSON:
            level = SERVER_JSON[name]
        elif name in SERVER_MACROS:
            level = SERVER_MACROS[name]
            if level.endswith("_INF") and not FAILURE_WORDS.search(text):
                continue
        elif name == "GGML_ABORT":
            level = "ABORT"
            if _strip_func(text, call.args, index):
                text = text[text.index(":") + 2 :]
                level = "ABORT func"
        else:
            level = LOGGERS[name]
            if level in ("INFO", "STDERR") and not FAILURE_WORDS.search(text):
                continue
            if _strip_func(text, call.args, index):
                text = text[text.index(":") + 2 :]
            else:
                level += " bare"
        if not text.strip():
            continue
        style = "printf" if "%" in text else "literal"
        found.append(Message(EMITTER, "", text, style, rel, call.line, level, function))  # type: ignore[arg-type]
    return found


_EXCEPTION = re.compile(
    r"(?<![\w:])(" + "|".join(re.escape(name) for name in EXCEPTIONS) + r")\s*\("
)


def _thrown(rel: str, source: str, macros: dict[str, str]) -> list[Message]:
    """`std::runtime_error(...)` texts: a literal, a `+` concatenation, or a printf `format`."""
    found: list[Message] = []
    clean = _blank_comments(source)
    functions = _Functions(clean)
    if LOADER_FILES.match(rel):
        level = "THROW load"
    elif CONTEXT_FILES.match(rel):
        level = "THROW context"
    else:
        level = "THROW"
    for call in _EXCEPTION.finditer(clean):
        parsed = _args(clean, call.end() - 1)
        if parsed is None or len(parsed[0]) != 1:
            continue
        arg = parsed[0][0].strip()
        line = clean.count("\n", 0, call.start()) + 1
        function = functions.at(call.start())
        head = FORMATTERS.match(arg)
        where = level
        if head is not None:
            inner = _args(arg, head.end() - 1)
            if inner is None or not inner[0]:
                continue
            inner_args = tuple(inner[0])
            text = csource.literal_value(inner_args[0], macros)
            if text is None:
                continue
            if _strip_func(text, inner_args, 0):
                text = text[text.index(":") + 2 :]
                where = level + " func"
            style = "printf" if "%" in text else "literal"
        else:
            message = _message([_piece(p) for p in _split_top(arg, "+")])
            if message is None:
                continue
            text, style = message
        text = text.strip("\n")
        if text.strip():
            found.append(Message(EMITTER, "", text, style, rel, line, where, function))  # type: ignore[arg-type]
    return found


def _sent_errors(rel: str, source: str, macros: dict[str, str]) -> list[Message]:
    """llama-server's `send_error(slot, "...", type)`: a literal, a concatenation or a
    `string_format(...)`, logged by send_error and returned to the client."""
    found: list[Message] = []
    clean = _blank_comments(source)
    functions = _Functions(clean)
    for call in _SEND_ERROR.finditer(clean):
        parsed = _args(clean, call.end() - 1)
        if parsed is None or len(parsed[0]) < 2:
            continue
        arg = parsed[0][1].strip()
        head = FORMATTERS.match(arg)
        if head is not None:
            inner = _args(arg, head.end() - 1)
            if inner is None or not inner[0]:
                continue
            text = csource.literal_value(inner[0][0], macros)
            if text is None:
                continue
            style = "printf" if "%" in text else "literal"
        else:
            message = _message([_piece(p) for p in _split_top(arg, "+")])
            if message is None:
                continue
            text, style = message
        line = clean.count("\n", 0, call.start()) + 1
        found.append(
            Message(EMITTER, "", text, style, rel, line, "SEND_ERROR", functions.at(call.start()))  # type: ignore[arg-type]
        )
    return found


def _device_printf(rel: str, source: str, macros: dict[str, str]) -> list[Message]:
    """`printf(...)` in the CUDA back end's device code (NO_DEVICE_CODE's report), printed to
    stdout from the kernel before it traps."""
    found: list[Message] = []
    clean = csource.strip_comments(source)
    functions = _Functions(clean)
    line_starts = [0, *(m.end() for m in re.finditer("\n", clean))]
    for call in csource.find_calls(source, ("printf",), macros=macros):
        if not FAILURE_WORDS.search(call.text):
            continue
        offset = line_starts[call.line - 1] if call.line - 1 < len(line_starts) else 0
        style = "printf" if "%" in call.text else "literal"
        found.append(
            Message(EMITTER, "", call.text, style, rel, call.line, "PRINTF", functions.at(offset))  # type: ignore[arg-type]
        )
    return found


def _streams(rel: str, source: str) -> list[Message]:
    found: list[Message] = []
    for m in bare_stream_messages(source, {"std::cerr": "STDERR bare"}):
        if FAILURE_WORDS.search(m.text):
            found.append(Message(EMITTER, "", m.text, m.style, rel, m.line, m.level, m.function))  # type: ignore[arg-type]
    return found


def extract(checkout: Path, release: str) -> list[Message]:
    found: list[Message] = []
    for path, rel in source_files(checkout, SUFFIXES, SKIP, roots=("",), include=INCLUDE):
        if "/tests/" in rel:
            continue
        source = path.read_text(encoding="utf-8", errors="replace")
        macros = {**csource.string_macros(source), **MACROS}
        found += [
            replace(message, release=release)
            for message in (
                *_printf_messages(rel, source, macros),
                *_thrown(rel, source, macros),
                *_streams(rel, source),
                *(_sent_errors(rel, source, macros) if SERVER_FILES.match(rel) else []),
                *(_device_printf(rel, source, macros) if CUDA_FILES.match(rel) else []),
            )
        ]
    return found
