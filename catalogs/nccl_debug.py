"""The messages of NCCL's debug channel, for NCCL and the forks that keep it (RCCL).

WARN(...) is NCCL's error channel (printed with NCCL_DEBUG=WARN, the level most jobs run at, and
kept as the communicator's last error); INFO(...) and INFO_LOC(...) lines are kept when their
text reports a failure (a retry, a fallback, an error code), since NCCL_DEBUG=INFO logs carry
them next to the WARN.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from catalogs.core.csource import find_calls
from catalogs.core.message import Message

SOURCE_SUFFIXES = (".cc", ".cu", ".h", ".cpp", ".c")
# INFO text that reports a failure rather than progress.
FAILURE_WORDS = re.compile(
    r"(?i)\b(?:fail\w*|error\w*|unable|cannot|can't|could not|couldn't|abort\w*|time[d ]?out|"
    r"invalid|mismatch\w*|exceed\w*|out of memory|not supported|unsupported|refused|closed|"
    r"fatal|unexpected|retry\w*|denied|lost|disabl\w+ due|falling back|fallback|warning)\b"
)


def debug_messages(
    checkout: Path,
    release: str,
    emitter: str,
    *,
    suffixes: tuple[str, ...] = SOURCE_SUFFIXES,
    printed: Callable[[str], str] = str,
) -> list[Message]:
    """Every WARN and failure-reporting INFO format under `checkout`/src, as `printed` says the
    emitter's build prints it (a fork that rewrites its sources before compiling them)."""
    messages: list[Message] = []
    root = checkout / "src"
    for path in sorted(root.rglob("*")):
        if path.suffix not in suffixes or not path.is_file():
            continue
        relative = path.relative_to(checkout).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        for call in find_calls(text, ("WARN", "INFO", "INFO_LOC")):
            position = 0 if call.name == "WARN" else 1
            if len(call.args) <= position or not call.args[position]:
                continue  # the format is a variable, not a literal
            fmt = printed(call.args[position].rstrip("\n"))
            level = "WARN" if call.name == "WARN" else "INFO"
            if level == "INFO" and not FAILURE_WORDS.search(fmt):
                continue
            style = "printf" if "%" in fmt else "literal"
            messages.append(Message(emitter, release, fmt, style, relative, call.line, level))
    return messages
