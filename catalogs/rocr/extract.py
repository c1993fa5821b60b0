"""The ROCm runtime's (ROCR, libhsa-runtime64) failure messages: the text `hsa_status_string()`
gives every `hsa_status_t`, and what the runtime itself prints to stderr before it aborts.

Reads ROCR's hsa-runtime sources, at `src/` (ROCR-Runtime up to ROCm 6.2) or
`runtime/hsa-runtime/` (from ROCm 6.3, when libhsakmt was merged into the repository):

- STATUS: each `case HSA_...:` of `hsa_status_string()` (core/runtime/hsa.cpp) with the string it
  sets, the function being the status's name. Every program over ROCm quotes these texts: the
  HIP runtime's queue callback ("Callback: Queue 0x... aborting with error : <text> code: 0x..."),
  ROCR's own default queue error handler (the text on a line of its own after "Queue at 0x...
  inactivated due to async error:"), RCCL, JAX/XLA and Triton. `HSA_STATUS_SUCCESS` is no failure
  and is left out.
- STDERR / STDOUT: `fprintf(stderr|stdout, ...)` in core/, libamdhsacode/, image/ and loader/
  (the memory-access-fault and HW-exception reports before `abort()`, the default queue error
  handler, the thread and lock failures of os_linux.cpp, the GPU core dump).
- PERROR: `perror("...")`, printed as "<text>: <strerror>". amd_elf_image.cpp's `perror` is a
  member function that records an error, not the C library's, and is left out.

`debug_print` / `debug_warning` (core/util/utils.h) print only in debug builds (NDEBUG unset)
and are not read; the macros' own bodies in utils.h are not messages. libhsakmt's `pr_err`
prints only when HSAKMT_DEBUG_LEVEL is set, and is not read either.
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core.csource import decode_literal, find_calls
from catalogs.core.message import Message

EMITTER = "rocr"
ROOTS = ("src", "runtime/hsa-runtime")
READ = ("core", "libamdhsacode", "image", "loader")
SUFFIXES = (".c", ".cpp", ".h", ".hpp")
SKIP = ("core/util/utils.h",)
NO_PERROR = ("libamdhsacode/amd_elf_image.cpp",)
STATUS_FILE = "core/runtime/hsa.cpp"
_STREAMS = {"stderr": "STDERR", "stdout": "STDOUT"}
_LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
# `case HSA_X:` then `*status_string = "..." "...";` (the literals joined)
_CASE = re.compile(
    r"case\s+(HSA_\w+)\s*:\s*\*status_string\s*=\s*((?:\"(?:[^\"\\\n]|\\.)*\"\s*)+);", re.S
)


def status_strings(text: str, relative: str, release: str) -> list[Message]:
    """(code, text) of every case of `hsa_status_string()`, at the line of its first literal."""
    start = text.find("hsa_status_string(")
    start = text.find("{", start) if start >= 0 else -1
    if start < 0:
        return []
    end = text.find("\n}", start)
    found: list[Message] = []
    for arm in _CASE.finditer(text, start, end if end >= 0 else len(text)):
        code = arm.group(1)
        if code == "HSA_STATUS_SUCCESS":
            continue
        string = "".join(decode_literal(piece) for piece in _LITERAL.findall(arm.group(2)))
        line = text.count("\n", 0, arm.start(2)) + 1
        found.append(Message(EMITTER, release, string, "literal", relative, line, "STATUS", code))
    return found


def _style(fmt: str) -> str:
    return "printf" if re.search(r"%[^%]", fmt.replace("%%", "")) else "literal"


def printed(text: str, relative: str, local: str, release: str) -> list[Message]:
    """The fprintf(stderr|stdout, ...) and perror(...) formats of one file."""
    found: list[Message] = []
    for call in find_calls(text, ("fprintf", "perror")):
        if call.name == "fprintf":
            stream = _stream(text, call.line)
            if stream is None or len(call.args) < 2 or not call.args[1]:
                continue  # another FILE*, or a format that is a variable
            fmt, level = call.args[1], _STREAMS[stream]
        else:
            if local in NO_PERROR or not call.args or not call.args[0]:
                continue
            fmt, level = call.args[0].rstrip("\n") + ": %s", "PERROR"
        fmt = fmt.rstrip("\n")
        if not fmt.strip():
            continue
        found.append(Message(EMITTER, release, fmt, _style(fmt), relative, call.line, level))  # type: ignore[arg-type]
    return found


def _stream(text: str, line: int) -> str | None:
    """The stream the fprintf on `line` (or the line after it) writes to."""
    lines = text.splitlines()
    window = " ".join(lines[line - 1 : line + 1])
    stream = re.search(r"\bfprintf\s*\(\s*(\w+)", window)
    return stream.group(1) if stream and stream.group(1) in _STREAMS else None


def extract(checkout: Path, release: str) -> list[Message]:
    messages: list[Message] = []
    for root in ROOTS:
        base = checkout / root
        if not base.is_dir():
            continue
        for top in READ:
            for path in sorted((base / top).rglob("*")):
                if path.suffix not in SUFFIXES or not path.is_file():
                    continue
                local = path.relative_to(base).as_posix()
                if local in SKIP:
                    continue
                relative = path.relative_to(checkout).as_posix()
                text = path.read_text(encoding="utf-8", errors="replace")
                if local == STATUS_FILE:
                    messages += status_strings(text, relative, release)
                messages += printed(text, relative, local, release)
    return messages
