"""What the best effort looks for besides the signature library: the abnormal lines no rule
explains (exception lines, error severities, signals, exhausted resources, non-zero exits,
scheduler failure states, NaN).

Consumes nothing itself; produces the `AbnormalLines` the one scan of the inputs runs beside the
library (`denpex.evidence`): a small lexicon of generic patterns in `lexicon/`, compiled by the
same matcher as the rules, and the judgement of each input's lexicon matches by
`abnormal.is_abnormal` (by content, not only by level: a warning that reports a failure is
abnormal, the benign chatter the lexicon names is not; a continuation line, such as a C++ frame
stack, takes the judgement of the message it continues).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from importlib import resources
from itertools import groupby
from pathlib import Path

from denpex.events import Match
from denpex.hybrid.abnormal import (
    continues,
    is_abnormal,
    is_below_error,
    last_resort,
    never_abnormal,
)
from denpex.match.scan import AbnormalLines, Matcher
from denpex.signatures.library import load_library
from denpex.signatures.signature import Role

__all__ = ["abnormal_lines", "is_below_error", "judged", "lexicon_matcher"]

CONTINUED_WITHIN = 2
"""A continuation line at most this many lines below the last message the lexicon saw
continues it (c10's stack: the message, "Exception raised from ...", "frame #0: ...")."""


@cache
def lexicon_matcher(backend: str = "auto", cache_dir: Path | None = None) -> Matcher:
    """The matcher of the generic abnormal-line lexicon, compiled once per process."""
    lexicon = Path(str(resources.files("denpex.hybrid").joinpath("lexicon")))
    return Matcher(load_library(lexicon, cache_dir=cache_dir), backend, cache_dir)


def judged(matches: Sequence[Match], explained: Sequence[Match] = ()) -> list[Match]:
    """The lexicon matches of one input that report something wrong, one per line, in input
    order. A continuation line takes the judgement of the message just above it; a last-resort
    line counts only when no other line of the input is abnormal and no signature found a
    failure in it (`explained`: the input's signature matches)."""
    found: list[Match] = []
    last: tuple[int, bool] | None = None  # line and judgement of the last message seen
    # A line a signature read is a message too: a context signature's (a known harmless
    # message, e.g. the watchdog reporting the abort a shutdown asked for) says its stack is
    # not abnormal; a failure's stack is as abnormal as the failure.
    read: dict[int, bool] = {}
    for match in explained:
        read[match.event.line] = read.get(match.event.line, False) or (
            match.role is not Role.context
        )
    read_lines = sorted(read)
    next_read = 0
    for line, on_line_iter in groupby(
        sorted(matches, key=lambda m: m.event.line), key=lambda m: m.event.line
    ):
        while next_read < len(read_lines) and read_lines[next_read] < line:
            if last is None or read_lines[next_read] > last[0]:
                last = (read_lines[next_read], read[read_lines[next_read]])
            next_read += 1
        on_line = list(on_line_iter)
        carried = last[1] if last is not None and line - last[0] <= CONTINUED_WITHIN else None
        verdicts = [is_abnormal(m.event.text, m.signature, carried) for m in on_line]
        if carried is None or not all(continues(m.signature) for m in on_line):
            last = (line, any(verdicts))
        else:
            last = (line, carried)
        if any(verdicts):
            found.append(on_line[verdicts.index(True)])
    telling = [m for m in found if not last_resort(m.signature)]
    if telling or any(m.role is not Role.context for m in explained):
        return telling
    return found


def abnormal_lines(backend: str = "auto", cache_dir: Path | None = None) -> AbnormalLines:
    """The lexicon and the judgement, as the one scan of the inputs takes them."""
    return AbnormalLines(
        lexicon_matcher(backend, cache_dir), judged, never_abnormal, CONTINUED_WITHIN
    )
