"""RCCL's failure messages: every WARN, and the INFO lines that report a failure.

RCCL is ROCm's fork of NCCL: the same WARN(...) / INFO(...) macros, printed by its src/debug.cc
with NCCL's own prefix ("NCCL WARN", "NCCL INFO"). Reads the C/C++ sources under src/ of one
release; INFO(...) and INFO_LOC(...) lines are kept when their text reports a failure, as for
NCCL (catalogs/nccl/extract.py), since NCCL_DEBUG=INFO logs carry them next to the WARN.

RCCL's build runs hipify-perl over these sources before compiling them (CMakeLists.txt, "Hipify
source files"), and hipify-perl rewrites CUDA API names wherever they stand, string literals
included: RCCL prints "hipIpcGetMemHandle failed : invalid argument" where the source says
cudaIpcGetMemHandle (ROCm/rccl-tests#120). `HIPIFIED` holds the names RCCL's messages contain
with hipify-perl's replacement (HIPIFY rocm-6.2.2, simpleSubstitutions); the text of a message
is the source's with those names replaced, as RCCL prints it.
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core.csource import find_calls
from catalogs.core.message import Message

EMITTER = "rccl"
SOURCE_SUFFIXES = (".cc", ".cu", ".h", ".cpp", ".hpp", ".c")
# INFO text that reports a failure rather than progress.
FAILURE_WORDS = re.compile(
    r"(?i)\b(?:fail\w*|error\w*|unable|cannot|can't|could not|couldn't|abort\w*|time[d ]?out|"
    r"invalid|mismatch\w*|exceed\w*|out of memory|not supported|unsupported|refused|closed|"
    r"fatal|unexpected|retry\w*|denied|lost|disabl\w+ due|falling back|fallback|warning)\b"
)


HIPIFIED = {
    "cudaIpcGetMemHandle": "hipIpcGetMemHandle",
    "cuDriverGetVersion": "hipDriverGetVersion",
    "cuInit": "hipInit",
}
_HIPIFIED = re.compile(r"\b(?:" + "|".join(HIPIFIED) + r")\b")


def hipified(text: str) -> str:
    """The text as RCCL prints it: the CUDA names hipify-perl rewrites replaced."""
    return _HIPIFIED.sub(lambda found: HIPIFIED[found.group(0)], text)


def extract(checkout: Path, release: str) -> list[Message]:
    messages: list[Message] = []
    root = checkout / "src"
    for path in sorted(root.rglob("*")):
        if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
            continue
        relative = path.relative_to(checkout).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        for call in find_calls(text, ("WARN", "INFO", "INFO_LOC")):
            position = 0 if call.name == "WARN" else 1
            if len(call.args) <= position or not call.args[position]:
                continue  # the format is a variable, not a literal
            fmt = hipified(call.args[position].rstrip("\n"))
            level = "WARN" if call.name == "WARN" else "INFO"
            if level == "INFO" and not FAILURE_WORDS.search(fmt):
                continue
            style = "printf" if "%" in fmt else "literal"
            messages.append(Message(EMITTER, release, fmt, style, relative, call.line, level))
    return messages
