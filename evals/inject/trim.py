"""Trimming healthy chatter out of captured logs without touching anything else.

Consumes the text of one captured file; produces the same text with only the middle of long runs
of consecutive healthy step lines (the worker's own `INFO train: ... step N loss ...` lines)
removed, and the number removed. A line that is not a healthy step line is never removed,
reordered or edited; no marker is inserted (a marker would be a line no program printed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The worker's step line, optionally behind torchrun's `[default3]:` tee prefix.
HEALTHY_STEP = re.compile(
    r"(?:\[[A-Za-z_][A-Za-z_-]*\d+\]:)?"
    r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO train: (?:rank \d+: )?"
    r"step \d+ loss \d+\.\d+ acc \d+\.\d+ step_time \d+\.\d+s data_time \d+\.\d+s"
)


@dataclass(frozen=True)
class Trimmed:
    text: str
    removed: int


def is_healthy(line: str) -> bool:
    return HEALTHY_STEP.fullmatch(line) is not None


def trim_healthy_runs(text: str, keep_head: int = 24, keep_tail: int = 24) -> Trimmed:
    """Keep the first `keep_head` and last `keep_tail` lines of every healthy run."""
    lines = text.splitlines(keepends=True)
    kept: list[str] = []
    removed = 0
    run: list[str] = []

    def flush() -> None:
        nonlocal removed
        if len(run) > keep_head + keep_tail:
            removed += len(run) - keep_head - keep_tail
            kept.extend(run[:keep_head] + run[len(run) - keep_tail :])
        else:
            kept.extend(run)
        run.clear()

    for line in lines:
        if is_healthy(line.rstrip("\r\n")):
            run.append(line)
            continue
        flush()
        kept.append(line)
    flush()
    return Trimmed(text="".join(kept), removed=removed)
