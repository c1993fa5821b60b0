"""NVSHMEM's failure messages from its C/C++/CUDA source (github.com/NVIDIA/nvshmem).

NVSHMEM reports through printf-style macros (src/include/non_abi/nvshmemx_error.h,
src/modules/bootstrap/common/bootstrap_util.h) that put a fixed prefix before the format:
`NVSHMEMI_ERROR_PRINT` / `BOOTSTRAP_ERROR_PRINT` / `NVSHMEMI_ERROR_EXIT` print
`<__FILE__>:<function>:<line>: <text>`, the `*_NZ_ERROR_JMP` / `*_NE_ERROR_JMP` / `*_ERROR_JMP`
forms `<__FILE__>:<line>: non-zero status: <n> <text>`, `*_NULL_ERROR_JMP` `... NULL value <text>`,
`NVSHMEMI_NZ_EXIT` `... non-zero status: <n>: <strerror>, exiting... <text>`, `NVSHMEMI_WARN_PRINT`
`WARN: <text>`, and `WARN(...)` (NVSHMEM_DEBUG=WARN) `host:pid:tid [dev] file:line NVSHMEM WARN
<text>`. Direct `fprintf(stream, ...)` lines are read too (level FPRINTF). Each message's level
names its prefix.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.core.csource import find_calls
from catalogs.core.message import Message
from catalogs.cppsource import source_files

EMITTER = "nvshmem"
SUFFIXES = (".cpp", ".cu", ".cuh", ".h", ".c", ".cc")
# macro -> (position of the format argument, the prefix it prints: the message's level)
MACROS = {
    "NVSHMEMI_ERROR_PRINT": (0, "ERROR"),
    "NVSHMEMI_ERROR_EXIT": (0, "ERROR"),
    "BOOTSTRAP_ERROR_PRINT": (0, "ERROR"),
    "NVSHMEMI_ERROR_JMP": (3, "STATUS"),
    "NVSHMEMI_NZ_ERROR_JMP": (3, "STATUS"),
    "BOOTSTRAP_NZ_ERROR_JMP": (3, "STATUS"),
    "NVSHMEMI_NE_ERROR_JMP": (4, "STATUS"),
    "BOOTSTRAP_NE_ERROR_JMP": (4, "STATUS"),
    "NVSHMEMI_EQ_ERROR_JMP": (4, "EQ"),
    "NVSHMEMI_NULL_ERROR_JMP": (4, "NULL"),
    "BOOTSTRAP_NULL_ERROR_JMP": (4, "NULL"),
    "NVSHMEMI_CHECK_ERROR_JMP": (4, "CHECK"),
    "NVSHMEMI_NZ_EXIT": (1, "EXIT"),
    "NVSHMEMI_NZ_SYSCHECK_EXIT": (1, "EXIT"),
    "NVSHMEMI_WARN_PRINT": (0, "WARN_PRINT"),
    "WARN": (0, "WARN"),
    "fprintf": (1, "FPRINTF"),
}
SKIP = ("src/include/non_abi/nvshmemx_error.h", "src/host/util/debug.cpp")


def extract(checkout: Path, release: str) -> list[Message]:
    found: list[Message] = []
    for path, rel in source_files(checkout, SUFFIXES, SKIP):
        text = path.read_text(encoding="utf-8", errors="replace")
        ncclsocket = "/ncclSocket/" in rel  # there WARN(...) is BOOTSTRAP_ERROR_PRINT
        for call in find_calls(text, MACROS):
            position, level = MACROS[call.name]
            if call.name == "WARN" and ncclsocket:
                level = "ERROR"
            if len(call.args) <= position or not call.args[position].strip():
                continue  # the format is a variable, not a literal
            fmt = call.args[position].rstrip("\n").rstrip()
            if not fmt.strip():
                continue
            style = "printf" if "%" in fmt else "literal"
            found.append(Message(EMITTER, release, fmt, style, rel, call.line, level))
    return found
