"""UCX's failure messages: the `ucs_error`, `ucs_warn` and `ucs_fatal` format strings of src/.

UCX logs through `ucs_log(level, fmt, ...)`; at the default UCX_LOG_LEVEL=warn the ERROR, WARN
and FATAL lines are printed (DIAG and below are not). Open MPI's UCX PML, UCC and NCCL's UCX
plugin print them on the rank's stderr. The tools (ucx_perftest, ucx_info) and the Java/Go
bindings are left out.

`ucs_status_string()` (src/ucs/type/status.c) gives each `ucs_status_t` its text ("Destination is
unreachable", "Endpoint timeout"); every program over UCX quotes it in its own wrapper (UCX's own
"... failed: %s", UCX-Py's "Error callback for endpoint 0x... called with status -6: %s" and
`UCXError`, Open MPI's pml/ucx, UCC, NIXL). Each case's string is a message of level STATUS,
its function the status's name; the wrappers are STATUS's anchor (source.yaml), as the CUDA
runtime's strings are matched after theirs.
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core.csource import find_calls
from catalogs.core.message import Message

LEVELS = {"ucs_error": "ERROR", "ucs_warn": "WARN", "ucs_fatal": "FATAL"}
SUFFIXES = (".c", ".h", ".cc", ".inl")
SKIP = ("src/tools/", "src/ucs/debug/log_def.h")
STATUS_FILE = "src/ucs/type/status.c"
_CASE = re.compile(r'case\s+(UCS_\w+)\s*:\s*return\s+"((?:[^"\\]|\\.)*)"\s*;')


def status_strings(checkout: Path, release: str) -> list[Message]:
    """Each `case UCS_X: return "...";` of `ucs_status_string()`, at the line of its string."""
    path = checkout / STATUS_FILE
    if not path.is_file():
        return []
    text = path.read_text(encoding="utf-8")
    return [
        Message(
            "ucx",
            release,
            m.group(2),
            "literal",
            STATUS_FILE,
            text.count("\n", 0, m.start(2)) + 1,
            "STATUS",
            m.group(1),
        )
        for m in _CASE.finditer(text)
    ]


def extract(checkout: Path, release: str) -> list[Message]:
    messages: list[Message] = []
    for path in sorted((checkout / "src").rglob("*")):
        relative = path.relative_to(checkout).as_posix()
        if path.suffix not in SUFFIXES or not path.is_file() or relative.startswith(SKIP):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for call in find_calls(text, tuple(LEVELS)):
            if not call.args or not call.args[0]:
                continue  # the format is a variable or a macro, not a literal
            fmt = call.args[0].rstrip("\n")
            style = "printf" if "%" in fmt else "literal"
            messages.append(
                Message("ucx", release, fmt, style, relative, call.line, LEVELS[call.name])
            )
    return messages + status_strings(checkout, release)
