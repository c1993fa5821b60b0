"""What the best effort looks for besides the signature library: the abnormal lines no rule
explains (exception lines, error severities, signals, exhausted resources, non-zero exits, NaN).

Consumes nothing itself; produces the `AbnormalLines` the one scan of the inputs runs beside the
library (`denpex.evidence`): a small lexicon of generic patterns in `lexicon/`, compiled by the
same matcher as the rules, and the judgement that keeps a line. Lines logged at warning level or
below are left out: they are the chatter every healthy run prints.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from pathlib import Path

from denpex.ingest.attribution import split_prefixes
from denpex.match.library import load_library
from denpex.match.scan import AbnormalLines, Matcher

_BELOW_ERROR = re.compile(
    r"^(?:\S+ )?\[?[WID]\d{4} \d{2}:\d{2}:\d{2}"  # glog warning / info / debug
    r"|^\[[WID] "  # PyTorch C++ warning prefix: [W socket.cpp:...]
    r"|\b(?:WARN(?:ING)?|INFO|DEBUG|NOTICE)\b"
    r"|\b[A-Z]\w*Warning\b"
)


@cache
def lexicon_matcher(backend: str = "auto", cache_dir: Path | None = None) -> Matcher:
    """The matcher of the generic abnormal-line lexicon, compiled once per process."""
    lexicon = Path(str(resources.files("denpex.hybrid").joinpath("lexicon")))
    return Matcher(load_library(lexicon, cache_dir=cache_dir), backend, cache_dir)


def is_below_error(text: str) -> bool:
    return bool(_BELOW_ERROR.search(split_prefixes(text).message))


def is_abnormal(text: str) -> bool:
    """Whether a line the lexicon found is kept: anything not logged below error level."""
    return not is_below_error(text)


def abnormal_lines(backend: str = "auto", cache_dir: Path | None = None) -> AbnormalLines:
    """The lexicon and the judgement, as the one scan of the inputs takes them."""
    return AbnormalLines(lexicon_matcher(backend, cache_dir), is_abnormal)
