"""The HIP runtime's device layer (ROCm/clr's rocclr, and hipamd's own aborts): the errors it logs
and the fatal lines it prints before it aborts the process.

rocclr logs through `ClPrint(level, mask, fmt, ...)` (rocclr/utils/debug.hpp), printed as
":<level>:<file>:<line>: <time> us: <message>" when AMD_LOG_LEVEL >= level:

- FATAL (level 0, printed whatever AMD_LOG_LEVEL is): `ClPrint(amd::LOG_NONE, ...)` (the queue
  callback's "Callback: Queue 0x... aborting with error : <HSA status text> code: 0x...",
  before `abort()`) and `guarantee(cond, fmt, ...)`, which prints its format and aborts.
- ERROR (level 1, printed from AMD_LOG_LEVEL=1, the level users set to debug a failing run):
  `LogError(msg)`, `LogPrintfError(fmt, ...)` and `ClPrint(amd::LOG_ERROR, ...)`. A format
  passed as `"%s", "<text>"` is that text.

Read: rocclr's ROCm device (device/rocm), its device-independent layer (device/*.cpp, platform,
os, thread, utils, elf) and hipamd/src; the PAL and legacy GPU devices (Windows and OpenCL
back ends), the Direct3D and OpenGL interop, hipRTC, textures and the tests are left out.
`DevLogError` / `DevLogPrintfError` print only in debug builds and are not read. Warnings and
info lines (`LogWarning`, `LogInfo`) are not read either: the failure paths log at ERROR.
hipamd's hipErrorNoBinaryForGpu reports are the hip_runtime catalog's (source.yaml covered_by).
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core.csource import find_calls
from catalogs.core.message import Message

EMITTER = "rocclr"
SUFFIXES = (".cpp", ".hpp", ".h")
# (folder, recursive)
FOLDERS = (
    ("rocclr/device/rocm", True),
    ("rocclr/device", False),
    ("rocclr/platform", True),
    ("rocclr/os", True),
    ("rocclr/thread", True),
    ("rocclr/utils", True),
    ("rocclr/elf", False),
    ("hipamd/src", False),
)
SKIP = re.compile(
    r"(?:^rocclr/utils/debug\.hpp$|/interop_|/hip_gl\.|/hip_texture\.|/hip_surface\.|/test/)"
)
CALLS = ("LogError", "LogPrintfError", "ClPrint", "guarantee")
_CLPRINT_LEVEL = re.compile(r"\bClPrint\s*\(\s*(?:amd::)?(LOG_\w+)")


def _format(call_name: str, args: tuple[str, ...]) -> str:
    position = 1 if call_name == "guarantee" else 2 if call_name == "ClPrint" else 0
    fmt = args[position] if len(args) > position else ""
    if fmt == "%s" and len(args) > position + 1 and args[position + 1]:
        fmt = args[position + 1]  # LogPrintfError("%s", "<text>")
    return fmt.strip("\n")


def _clprint_level(lines: list[str], line: int) -> str | None:
    window = " ".join(lines[line - 1 : line + 1])
    found = _CLPRINT_LEVEL.search(window)
    return found.group(1) if found else None


def messages_of(text: str, relative: str, release: str) -> list[Message]:
    lines = text.splitlines()
    found: list[Message] = []
    for call in find_calls(text, CALLS):
        if call.name == "ClPrint":
            level = {"LOG_NONE": "FATAL", "LOG_ERROR": "ERROR"}.get(
                _clprint_level(lines, call.line) or ""
            )
            if level is None:
                continue  # warnings, info and debug traces
        else:
            level = "FATAL" if call.name == "guarantee" else "ERROR"
        fmt = _format(call.name, call.args)
        if not fmt.strip():
            continue  # a format that is a variable (a macro's own body)
        style = "printf" if re.search(r"%[^%]", fmt.replace("%%", "")) else "literal"
        found.append(Message(EMITTER, release, fmt, style, relative, call.line, level))  # type: ignore[arg-type]
    return found


def extract(checkout: Path, release: str) -> list[Message]:
    messages: list[Message] = []
    for folder, recursive in FOLDERS:
        base = checkout / folder
        if not base.is_dir():
            continue
        paths = base.rglob("*") if recursive else base.glob("*")
        for path in sorted(paths):
            if path.suffix not in SUFFIXES or not path.is_file():
                continue
            relative = path.relative_to(checkout).as_posix()
            if SKIP.search(relative):
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            messages += messages_of(text, relative, release)
    return messages
