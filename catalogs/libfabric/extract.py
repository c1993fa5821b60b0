"""libfabric's messages: the providers' FI_WARN/FI_INFO log lines (core, util, efa, verbs, tcp,
shm, rxm), the fi_strerror() table and the EFA provider's error-code table.

Reads a libfabric release tree (`src/`, `prov/`). `level` is what fi_log prints between angle
brackets (`warn`, `info`); the error tables' strings (`level: errstr`) are what fi_strerror()
and the EFA provider append to a failing call's message. FI_DBG/FI_TRACE are debug builds'
output and are not extracted.
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core.message import Message
from catalogs.csource import find_calls, literal_value, strip_comments

EMITTER = "libfabric"
FOLDERS = ("src", "prov/util", "prov/efa", "prov/verbs", "prov/tcp", "prov/shm", "prov/rxm")
# call -> (index of the format argument, level)
CALLS: dict[str, tuple[int, str]] = {
    "FI_WARN": (2, "warn"),
    "FI_WARN_ONCE": (2, "warn"),
    "FI_WARN_SPARSE": (2, "warn"),
    "FI_INFO": (2, "info"),
    "EFA_WARN": (1, "warn"),
    "EFA_WARN_ONCE": (1, "warn"),
    "EFA_INFO": (1, "info"),
    "VRB_WARN": (1, "warn"),
    "VRB_INFO": (1, "info"),
}
_XMACRO = re.compile(r"^\s*_\(\s*(\d+)\s*,\s*(\w+)\s*,\s*(.*?)\)\s*\\?\s*$", re.MULTILINE)


def _message(release: str, text: str, file: str, line: int, level: str, function: str) -> Message:
    return Message(
        emitter=EMITTER,
        release=release,
        text=text,
        style="printf" if "%" in text else "literal",
        file=file,
        line=line,
        level=level,
        function=function,
    )


def _log_calls(checkout: Path, release: str) -> list[Message]:
    out: list[Message] = []
    for folder in FOLDERS:
        base = checkout / folder
        if not base.is_dir():
            continue
        for path in sorted(p for p in base.rglob("*") if p.suffix in (".c", ".h") and p.is_file()):
            source = path.read_text(encoding="utf-8", errors="replace")
            for call in find_calls(source, CALLS, format_arg={k: v[0] for k, v in CALLS.items()}):
                text = call.text.rstrip("\n")
                if text.strip():
                    relative = str(path.relative_to(checkout))
                    level = CALLS[call.name][1]
                    out.append(_message(release, text, relative, call.line, level, call.function))
    return out


def _error_tables(checkout: Path, release: str) -> list[Message]:
    out: list[Message] = []
    fabric = checkout / "src/fabric.c"
    if fabric.is_file():
        clean = strip_comments(fabric.read_text(encoding="utf-8", errors="replace"))
        table = re.search(r"errstr\[\]\s*=\s*\{(.*?)\};", clean, re.DOTALL)
        if table:
            for found in re.finditer(
                r'\[\s*(\w+)[^\]]*\]\s*=\s*("(?:[^"\\\n]|\\.)*")', table.group(1)
            ):
                text = literal_value(found.group(2)) or ""
                line = clean.count("\n", 0, table.start(1) + found.start()) + 1
                out.append(_message(release, text, "src/fabric.c", line, "errstr", found.group(1)))
    errno_h = checkout / "prov/efa/src/efa_errno.h"
    if errno_h.is_file():
        source = errno_h.read_text(encoding="utf-8", errors="replace")
        for found in _XMACRO.finditer(source):
            line = source.count("\n", 0, found.start()) + 1
            function = f"EFA_{found.group(2)}"
            text = found.group(3).strip()
            out.append(
                _message(release, text, "prov/efa/src/efa_errno.h", line, "errstr", function)
            )
    return out


def extract(checkout: Path, release: str) -> list[Message]:
    return sorted(set(_log_calls(checkout, release) + _error_tables(checkout, release)))
