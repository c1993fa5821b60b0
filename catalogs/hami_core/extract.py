"""HAMi-core's failure messages (github.com/Project-HAMi/HAMi-core: `libvgpu.so`, the CUDA and
NVML interposer that HAMi's device plugin preloads into containers sharing a GPU, to hold each
one to its memory and compute share), from the source of a pinned commit (see source.yaml).

HAMi-core reports through printf-style macros (src/include/log_utils.h) that print to stderr a
fixed prefix, then the format, then a newline:

- `LOG_ERROR(fmt, ...)`: `[HAMI-core ERROR (pid:<pid> thread=<tid> <file>:<line>)]: ` always
  (level ERROR);
- `LOG_WARN` / `LOG_MSG`: `[HAMI-core Warn(<pid>:<tid>:<file>:<line>)]: ` and `[HAMI-core
  Msg(...)]: ` at LIBCUDA_LOG_LEVEL 2, the default (levels WARN and MSG);
- `LOG_INFO`: `[HAMI-core Info(...)]: ` at LIBCUDA_LOG_LEVEL 3 and above, kept when its text
  reports a failure (the words catalogs/nccl_debug.py keeps NCCL's INFO lines by): most INFO
  lines trace the accounting of every allocation (level INFO);
- `QUIT_WITH_ERROR(msg)` (src/allocator/allocator.h): `LOG_ERROR("%s\\n", #msg)`, the call's
  argument stringized, so a literal prints with its quotes (level ERROR). The `LOG_ERROR` in the
  macro's own body is a bare placeholder and is left out.

`LOG_DEBUG` (LIBCUDA_LOG_LEVEL 4) traces calls and is not read. The `<file>` each prefix prints is
the basename of the file the macro is used in (the CHECK_* macros of log_utils.h print their
caller's), which the line templates render as the file read here.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.core.csource import find_calls
from catalogs.core.message import Message
from catalogs.cppsource import source_files
from catalogs.nccl_debug import FAILURE_WORDS

EMITTER = "hami_core"
SUFFIXES = (".c", ".h", ".cu", ".cpp")
# macro -> the level of the prefix it prints
MACROS = {
    "LOG_ERROR": "ERROR",
    "LOG_WARN": "WARN",
    "LOG_MSG": "MSG",
    "LOG_INFO": "INFO",
    "QUIT_WITH_ERROR": "ERROR",
}
# the checked-in build trees of old commits, and the unused header kept for reference
SKIP = ("src/include/cuda_addition_func.h.unused",)


def _format(call_name: str, argument: str) -> str:
    """The text the macro prints for its format argument, less the newline it adds."""
    if call_name == "QUIT_WITH_ERROR":
        # `#msg` of a string literal is the literal with its quotes
        return f'"{argument}"'
    return argument.rstrip("\n").rstrip()


def extract(checkout: Path, release: str) -> list[Message]:
    found: list[Message] = []
    for path, rel in source_files(checkout, SUFFIXES, SKIP):
        text = path.read_text(encoding="utf-8", errors="replace")
        for call in find_calls(text, MACROS):
            if not call.args or not call.args[0].strip():
                continue  # the format is a variable, not a literal
            fmt = _format(call.name, call.args[0])
            if not fmt.replace("%s", "").strip():
                continue  # QUIT_WITH_ERROR's own body: a bare placeholder
            level = MACROS[call.name]
            if level == "INFO" and not FAILURE_WORDS.search(fmt):
                continue
            style = "printf" if "%" in fmt else "literal"
            found.append(Message(EMITTER, release, fmt, style, rel, call.line, level))
    return found
