"""nccl-tests' failure messages: its CUDACHECK / NCCLCHECK / TESTCHECK failure lines, argument
errors and data-check failures, printed with printf, fprintf(stderr, ...) or its PRINT macro.

Reads src/ and verifiable/ of one release. Progress and result-table lines are not failures
and are not extracted; a printf is kept when its text reports a failure.
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core.csource import find_calls
from catalogs.core.message import Message

SOURCE_SUFFIXES = (".cu", ".cc", ".h", ".cpp", ".c")
FAILURE_WORDS = re.compile(
    r"(?i)\b(?:fail\w*|error\w*|unable|cannot|can't|could not|abort\w*|invalid|wrong|"
    r"mismatch\w*|corrupt\w*|out of|not supported|unsupported|timeout|timed out|unknown)\b"
)


def extract(checkout: Path, release: str) -> list[Message]:
    messages: list[Message] = []
    for folder in ("src", "verifiable"):
        root = checkout / folder
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
                continue
            relative = path.relative_to(checkout).as_posix()
            text = path.read_text(encoding="utf-8", errors="replace")
            for call in find_calls(text, ("printf", "fprintf", "PRINT")):
                position = 1 if call.name == "fprintf" else 0
                if len(call.args) <= position or not call.args[position]:
                    continue
                fmt = call.args[position].strip("\n")
                if not FAILURE_WORDS.search(fmt):
                    continue
                level = "stderr" if call.name == "fprintf" else "stdout"
                style = "printf" if "%" in fmt else "literal"
                messages.append(
                    Message("nccl_tests", release, fmt, style, relative, call.line, level)
                )
    return messages
