"""Whether one line is abnormal: the judgement behind the excerpt and behind `no_failure`.

Consumes one line's text and the lexicon signature (`lexicon/`) the matcher found on it;
produces a yes or no. A pure function of the line, so any scan can call it. The lexicon says
how much a line's content weighs, as data: each signature's `confidence` is how strongly its
match reports a failure by itself, whatever level the line was logged at.

- `continuation` signatures (a C++ exception's frame stack) take the judgement of the message
  they continue, passed in as `carried`; on their own they are abnormal;
- `last_resort` signatures (a Python traceback's frames) count only in an input where no other
  line is abnormal (the caller applies this over the input: `harvest.judged`);
- a line logged at error level, or at no level, is abnormal when any lexicon signature matches;
- a warning is abnormal when its content reports a failure (confidence >= `REPORTS_FAILURE`):
  "NCCL WARN ... failed", "... Connection refused";
- an info or debug line, or a Python warning (advice, e.g. a UserWarning that mentions a
  "Failure to do this"), only when its content reports a failure whatever the level
  (confidence >= `WHATEVER_LEVEL`): a scheduler's failure state, a signal death.
"""

from __future__ import annotations

import functools
import re
from enum import IntEnum

from denpex.ingest.attribution import split_prefixes
from denpex.signatures.signature import Signature

CONTINUATION_FAMILY = "continuation"
LAST_RESORT_FAMILY = "last_resort"
"""Lines that say something went wrong only where nothing else in their input does (a Python
traceback's frames without the exception line that ends them): kept then, and otherwise left
out so that they neither crowd the excerpt nor stand for the exception they lead to."""
REPORTS_FAILURE = 0.2
"""A lexicon signature at least this confident marks a warning as abnormal."""
WHATEVER_LEVEL = 0.5
"""A lexicon signature at least this confident marks even an info or debug line abnormal."""


class Level(IntEnum):
    debug = 0
    info = 1
    warning = 2
    error = 3
    none = 4
    """No level marker: what programs print to stderr when they die."""


def _glog(letters: str) -> re.Pattern[str]:
    """glog's (and c10's) line head at the start of a message: `I1130 06:50:17.880 ...`,
    `[E ...`, after an optional word (a host name); and TensorFlow's (absl's C++ logging):
    `2020-06-08 05:30:15.889706: W tensorflow/core/kernels/...cc:103] `."""
    return re.compile(
        rf"(?:\S+ )?\[?{letters}\d{{3,4}} \d{{2}}:\d{{2}}:\d{{2}}|\[{letters} "
        rf"|(?:\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: )?{letters} [\w/.-]+\.(?:cc|h|cpp):\d+\] "
    )


# (level, its glog head, its markers anywhere in the message, a word each marker holds). A
# message is searched for the markers only when it holds one of the words: most lines hold
# none, and the searches' look-arounds at every position cost more than the whole judgement.
_LEVELS: tuple[tuple[Level, re.Pattern[str], re.Pattern[str], tuple[str, ...]], ...] = (
    (
        Level.error,
        _glog("[EF]"),
        re.compile(r"(?<!=)\b(?:ERROR|FATAL|CRITICAL)\b(?!=)"),
        ("ERROR", "FATAL", "CRITICAL"),
    ),
    (
        Level.warning,
        _glog("W"),
        re.compile(r"(?<!=)\bWARN(?:ING)?\b(?!=)|\twarn(?:ing)?\t"),
        ("WARN", "\twarn"),
    ),
    (
        Level.info,
        _glog("[ID]"),
        re.compile(
            r"(?<!=)\b(?:INFO|DEBUG|NOTICE|TRACE)\b(?!=)|\t(?:info|debug|trace)\t"
            + r"|\b[A-Z]\w*Warning\b"  # Python's warnings module: advice, not a failure
        ),
        ("INFO", "DEBUG", "NOTICE", "TRACE", "\tinfo", "\tdebug", "\ttrace", "Warning"),
    ),
)


@functools.lru_cache(maxsize=4096)
def level_of(text: str) -> Level:
    """The level a line was logged at, read after its launcher prefixes. Remembered for the
    last lines judged: chatter repeats verbatim (NCCL prints the same INFO line for every
    communicator and channel, a thousand times a rank), and a log's scan judges each."""
    message = split_prefixes(text).message
    for level, head, markers, words in _LEVELS:
        if head.match(message) or (
            any(word in message for word in words) and markers.search(message)
        ):
            return level
    return Level.none


def never_abnormal(text: str, signature: Signature) -> bool:
    """Whether `is_abnormal` says no to this line whatever surrounds it: the scan drops such a
    match before building its event (thousands of NCCL INFO lines mention "failed" harmlessly).
    A continuation line's judgement depends on the line it continues, so it is never dropped."""
    if continues(signature):
        return False
    level = level_of(text)
    if level is Level.warning:
        return signature.confidence < REPORTS_FAILURE
    if level in (Level.debug, Level.info):
        return signature.confidence < WHATEVER_LEVEL
    return False


def is_below_error(text: str) -> bool:
    return level_of(text) in (Level.debug, Level.info, Level.warning)


def continues(signature: Signature) -> bool:
    """Whether lines of this signature continue the message above them."""
    return signature.family == CONTINUATION_FAMILY


def last_resort(signature: Signature) -> bool:
    return signature.family == LAST_RESORT_FAMILY


def is_abnormal(text: str, signature: Signature, carried: bool | None = None) -> bool:
    """Whether a line the lexicon signature `signature` matched reports something wrong.
    `carried` is the judgement of the message a continuation line continues, None when the
    line continues nothing the scan saw (or is no continuation)."""
    if continues(signature) and carried is not None:
        return carried
    level = level_of(text)
    if level >= Level.error:
        return True
    if level is Level.warning:
        return signature.confidence >= REPORTS_FAILURE
    return signature.confidence >= WHATEVER_LEVEL
