"""Intel's Unified Runtime (UR): its result codes and the failure messages its loader, layers and
adapters log, from the source of a pinned release (github.com/oneapi-src/unified-runtime, since
v0.12 developed in intel/llvm's unified-runtime/ and mirrored back; see source.yaml).

UR sits under SYCL/DPC++ and PyTorch XPU (through SYCL): a failed UR call reaches the user as its
`ur_result_t` name in SYCL's exception text ("Native API failed. Native API returns: 39
(UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)", later "level_zero backend failed with error: 20
(UR_RESULT_ERROR_DEVICE_LOST)"), and as the lines UR's own loggers print. Read here:

- RESULT: every `UR_RESULT_*` member of `ur_result_t` in `include/ur_api.h`
  (`include/unified-runtime/ur_api.h` from 0.12). The name is the message; its function is the
  code's decimal value, which SYCL prints before the name (an enum member has no enclosing
  function). The `///` comment of each member (before it from 0.12, `///<` after it before) is
  what the code means, kept in mapping.yaml's caveats.
- the logger calls of the loader (`source/loader/`, without the tracing layer, which prints every
  call and result), its sanitizer and validation layers, the Level Zero, CUDA, HIP and OpenCL
  adapters and the code they share (`source/common/`, `source/ur/`): `logger::error(fmt, ...)`,
  `logger::warning(...)` and a logger object's `.error(...)`/`.warning(...)`/`.always(...)`
  (0.9-0.11); `UR_LOG(ERR|WARN|..., fmt, ...)`, `UR_LOG_L(logger, LEVEL, fmt, ...)`,
  `UR_LOG_LEGACY(LEVEL, legacy, fmt, ...)`, `UR_LOG_SAFE(LEVEL, ...)` and
  `logger.log(UR_LOGGER_LEVEL_ERROR, file, line, fmt, ...)` (0.12). A logger prints
  "<NAME>[ERROR]: " before the message, NAME the logger's upper-cased name (LEVEL_ZERO, CUDA, HIP,
  OPENCL, LOADER, SANITIZER, VALIDATION), so the level is "NAME:ERROR" / "NAME:WARNING"; the code
  in `source/common/` and `source/ur/` logs through the logger of the library it is linked into
  ("COMMON:..."). Errors and warnings are read everywhere; the loader's INFO lines that report a
  failure (an adapter library that did not load) too; debug output is progress, not failures.
- REPORT: the device sanitizer's reports (`.always(...)` / `UR_LOG_L(..., QUIET, ...)` in the
  sanitizer layer: "====ERROR: DeviceSanitizer: out-of-bounds-access on Device USM"), printed
  with no prefix.
- DIE: `die("...")` (`ur::die`, `detail::ur::die`): the adapters' fatal stops, printed as
  "ur_die: <message>" before std::terminate.
- ADAPTER: `setErrorMessage("...", code)`: the adapter-specific error an adapter returns with
  UR_RESULT_ERROR_ADAPTER_SPECIFIC, which SYCL prints on its own line after the result code.
- the CUDA and HIP adapters' reports of a failed native call (`SS << "\\nUR CUDA ERROR:" << ...`,
  logged whole at ERROR).

Left out: tests, examples, tools, the mock, null, native CPU and offload adapters (the first
two are test doubles, the last two not what ML runs use) and the tracing layer.
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core import Message
from catalogs.core.csource import find_calls
from catalogs.cppsource import _blank_comments, _enclosing_function
from catalogs.cppstreams import sink_messages

EMITTER = "unified_runtime"
HEADERS = ("include/ur_api.h", "include/unified-runtime/ur_api.h")
_ENUM = re.compile(r"typedef\s+enum\s+ur_result_t\s*\{(?P<body>.*?)\}\s*ur_result_t\s*;", re.S)
_MEMBER = re.compile(r"^\s*(UR_RESULT_\w+)(?:\s*\[\[\w+\]\])?\s*=\s*(0x[0-9a-fA-F]+|\d+)", re.M)

SUFFIXES = {".cpp", ".hpp", ".h", ".c"}
# file prefix -> the logger its code prints through (first match wins)
LOGGERS: tuple[tuple[str, str], ...] = (
    ("source/adapters/level_zero/", "LEVEL_ZERO"),
    ("source/adapters/cuda/", "CUDA"),
    ("source/adapters/hip/", "HIP"),
    ("source/adapters/opencl/", "OPENCL"),
    ("source/loader/layers/sanitizer/", "SANITIZER"),
    ("source/loader/layers/validation/", "VALIDATION"),
    ("source/loader/", "LOADER"),
    ("source/common/linux/ur_lib_loader", "LOADER"),
    ("source/common/windows/ur_lib_loader", "LOADER"),
    ("source/common/", "COMMON"),
    ("source/ur/", "COMMON"),
)
SKIP = (
    "source/loader/layers/tracing/",  # prints every call and its result
    "source/common/logger/",  # the logger itself
    "source/adapters/mock/",
    "source/adapters/null/",
    "source/adapters/native_cpu/",
    "source/adapters/offload/",
)
# the CUDA and HIP adapters' reports of a failed native call, built in `SS` and logged whole
STREAM_REPORTS = ("source/adapters/cuda/common.cpp", "source/adapters/hip/common.cpp")

# 0.9-0.11: `logger::error(`, `getContext()->logger.error(`, `Logger.warning(`: each call is
# renamed in place (same line) to one marker find_calls reads like a function.
_OLD_CALL = re.compile(
    r"(?<![\w.>:])(?:logger::|(?:(?:\w+\(\)|\w+)(?:->|\.))*(?:logger|Logger|log)\.)"
    r"(error|warning|warn|always|info)\s*\("
)
_OLD_LEVEL = {
    "error": "ERROR",
    "warning": "WARNING",
    "warn": "WARNING",
    "always": "QUIET",
    "info": "INFO",
}
# 0.12: the UR_LOG macros (their level first, or after the logger) and the validation layer's
# `logger.log(UR_LOGGER_LEVEL_ERROR, file, line, fmt, ...)`
_MACROS = {"UR_LOG": 0, "UR_LOG_SAFE": 0, "UR_LOG_LEGACY": 0, "UR_LOG_L": 1}
_LOG_METHOD = re.compile(r"(?<![\w])(?:(?:\w+\(\)|\w+)(?:->|\.))*logger\.log\s*\(")
_LOG_METHOD_LEVEL = re.compile(r"UR_LOGGER_LEVEL_(\w+)")
_LEVEL = {"ERR": "ERROR", "ERROR": "ERROR", "WARN": "WARNING", "QUIET": "QUIET", "INFO": "INFO"}
# the loader's INFO lines that report a failure (an adapter library that did not load)
_INFO_FAILURE = re.compile(r"(?i)\b(?:fail|error|unable|cannot|could not|not found|missing)")


def _logger_of(rel: str) -> str:
    return next((name for prefix, name in LOGGERS if rel.startswith(prefix)), "")


def _results(checkout: Path, release: str) -> list[Message]:
    header = next((h for h in HEADERS if (checkout / h).is_file()), None)
    if header is None:
        return []
    text = (checkout / header).read_text(encoding="utf-8")
    enum = _ENUM.search(text)
    if enum is None:
        return []
    found: list[Message] = []
    for member in _MEMBER.finditer(enum.group("body")):
        name, value = member.group(1), member.group(2)
        if name == "UR_RESULT_FORCE_UINT32":
            continue  # the enum's width marker, never returned
        line = text.count("\n", 0, enum.start("body") + member.start(1)) + 1
        number = str(int(value, 0))
        found.append(Message(EMITTER, release, name, "literal", header, line, "RESULT", number))
    return found


def _style(text: str) -> str:
    return "brace" if "{" in text or "}" in text else "literal"


def _offset(rows: list[str], line: int) -> int:
    """Where 1-based `line` starts in the text split into `rows`."""
    return sum(len(row) + 1 for row in rows[: line - 1])


def _logged(text: str) -> list[tuple[str, int, str, str]]:
    """(severity, line, format, function) of each logger call in one file's text."""
    marked = _LOG_METHOD.sub("__ur_log_method__(", _OLD_CALL.sub(r"__ur_old_\1__(", text))
    names = {f"__ur_old_{name}__" for name in _OLD_LEVEL} | set(_MACROS) | {"__ur_log_method__"}
    clean = _blank_comments(text)
    rows = clean.splitlines()
    found: list[tuple[str, int, str, str]] = []
    for call in find_calls(marked, names):
        head = " ".join(rows[call.line - 1 : call.line + 3])  # the call's first lines
        if call.name in _MACROS:
            skip = _MACROS[call.name]
            word = re.search(rf"\b{call.name}\s*\(\s*" + r"[^,]*,\s*" * skip + r"(\w+)", head)
            severity = _LEVEL.get(word.group(1), "") if word else ""
            rest = call.args[skip + 1 :]
            if call.name == "UR_LOG_LEGACY":
                rest = rest[1:]  # the legacy sink's own text comes first
        elif call.name == "__ur_log_method__":
            word = _LOG_METHOD_LEVEL.search(head)
            severity = _LEVEL.get(word.group(1), "") if word else ""
            rest = call.args[3:]  # level, file, line, then the format
        else:
            severity = _OLD_LEVEL[call.name.removeprefix("__ur_old_").removesuffix("__")]
            rest = call.args
            if rest and not rest[0] and "LegacyMessage" in head:
                rest = rest[1:]  # logger::error(logger::LegacyMessage("..."), fmt, ...)
        if severity and rest and rest[0]:
            function = _enclosing_function(clean, _offset(rows, call.line))
            found.append((severity, call.line, rest[0], function))
    return found


def _file_messages(rel: str, text: str, release: str) -> list[Message]:
    logger = _logger_of(rel)
    found: list[Message] = []

    def add(body: str, style: str, line: int, level: str, function: str = "") -> None:
        found.append(Message(EMITTER, release, body, style, rel, line, level, function))  # type: ignore[arg-type]

    for severity, line, body, function in _logged(text):
        if severity == "QUIET":
            if logger == "SANITIZER":
                add(body, _style(body), line, "REPORT", function)
            continue  # die()'s own print, the UR_L0_DEBUG call traces
        if severity == "INFO":
            if logger == "LOADER" and _INFO_FAILURE.search(body):
                add(body, _style(body), line, f"{logger}:INFO", function)
            continue
        add(body, _style(body), line, f"{logger}:{severity}", function)
    clean = _blank_comments(text)
    rows = clean.splitlines()
    for call in find_calls(text, ("die", "setErrorMessage")):
        if not call.args or not call.args[0]:
            continue  # the helpers' own definitions, a message passed on as a variable
        level = "DIE" if call.name == "die" else "ADAPTER"
        function = _enclosing_function(clean, _offset(rows, call.line))
        add(call.args[0], "literal", call.line, level, function)
    if rel in STREAM_REPORTS:
        for m in sink_messages(text, ("SS",), f"{logger}:ERROR"):
            add(m.text, m.style, m.line, m.level, m.function)
    return found


def extract(checkout: Path, release: str) -> list[Message]:
    messages = _results(checkout, release)
    for path in sorted((checkout / "source").rglob("*")):
        if path.suffix not in SUFFIXES or not path.is_file():
            continue
        rel = path.relative_to(checkout).as_posix()
        if rel.startswith(SKIP) or "/test" in rel or not _logger_of(rel):
            continue
        messages += _file_messages(rel, path.read_text(encoding="utf-8", errors="replace"), release)
    return messages
