"""Turns a matched line of a chunk into an `Event`: who printed it, when, and its traceback.

Consumes a chunk and the offset of a line in it; produces an `Event`. Only lines that matter are
decoded. A line without a timestamp takes the nearest earlier one printed by the same emitter
(then any earlier one, then a later one) and is marked inferred. A Python exception line keeps
the traceback above it as its context, so a multi-line traceback is one event.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from denpex.events import Attribution, Event
from denpex.ingest.attribution import Prefixed, rank_stated_by_c10d, split_prefixes
from denpex.ingest.numbers import identifier
from denpex.ingest.reader import Chunk
from denpex.ingest.timestamps import NO_STAMP, Stamp, parse_stamp

MAX_TEXT = 2000
LOOKAROUND_LINES = 200
MAX_TRACEBACK_LINES = 120
_TRACEBACK_HEAD = "Traceback (most recent call last):"
# torch.multiprocessing.spawn re-raises a child's exception under this header; the index is the
# spawned process's local rank.
_SPAWN_HEADER = re.compile(r"-- Process (?P<index>\d+) terminated with the following error:")
# A logger that prints its header on every line of a traceback (vLLM's workers:
# "ERROR 05-10 16:00:15 [multiproc_executor.py:470] ") hides the traceback's shape behind it.
_REPEATED_LOGGER_HEADER = re.compile(
    r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)? "
    r"\[?[\w./-]+\.py:\d+\] "
)
_SYSLOG_HOST = re.compile(
    r"^(?:[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}(?:\.\d+)?|\d{4}-\d{2}-\d{2}T[\d:.,+-]+Z?) "
    r"(?P<host>[A-Za-z0-9][\w.-]*) (?:kernel|[\w./-]+(?:\[\d+\])?):"
)


@dataclass
class SourceContext:
    """Facts about one input that every line of it shares."""

    name: str
    who: Attribution
    default_year: int
    srun_labelled: bool = False
    years_seen: set[int] = field(default_factory=set)
    looked_at: _LookedAt | None = field(default=None, repr=False, compare=False)
    """What look-backs in the current chunk found (see `_inherited_stamp`)."""


@dataclass
class _LookedAt:
    """Look-backs in one chunk: each line's emitter and own timestamp, parsed once, and per
    emitter the last look-back's findings, which the next one for that emitter extends."""

    data: bytes
    lines: dict[int, tuple[Attribution, Stamp]] = field(default_factory=dict)
    last: dict[tuple[int | None, ...], _Found] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Found:
    """A look-back from the line at `start`: the nearest stamped line of the same emitter and
    the nearest stamped line of any emitter within LOOKAROUND_LINES above it (line starts)."""

    start: int
    same: int | None
    same_stamp: Stamp
    nearest: int | None
    nearest_stamp: Stamp


def line_bounds(data: bytes, start: int) -> tuple[int, int]:
    end = data.find(b"\n", start)
    return start, len(data) if end < 0 else end


# Terminal control sequences (colours, cursor moves): never part of what a program reported, and
# not to be replayed on a reader's terminal.
_CONTROL_SEQUENCE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")


def decode(raw: bytes) -> str:
    text = raw.decode("utf-8", errors="replace")
    text = text[:-1] if text.endswith("\r") else text
    return _CONTROL_SEQUENCE.sub("", text) if "\x1b" in text else text


def clip(text: str, around: int | None = None) -> str:
    """At most MAX_TEXT characters of a line, centred on `around` when given."""
    if len(text) <= MAX_TEXT:
        return text
    if around is None:
        return text[:MAX_TEXT] + " …[line cut]"
    start = max(0, min(around - MAX_TEXT // 2, len(text) - MAX_TEXT))
    return "…" + text[start : start + MAX_TEXT] + "…"


def _previous_line_starts(data: bytes, start: int, limit: int) -> Iterator[int]:
    """Starts of the lines above `start`, nearest first, found only as they are asked for."""
    position = start
    for _ in range(limit):
        if position <= 0:
            return
        position = data.rfind(b"\n", 0, position - 1) + 1
        yield position


def _next_line_starts(data: bytes, start: int, limit: int) -> Iterator[int]:
    position = data.find(b"\n", start)
    for _ in range(limit):
        if position < 0 or position + 1 >= len(data):
            return
        yield position + 1
        position = data.find(b"\n", position + 1)


def split(raw: bytes, context: SourceContext) -> Prefixed:
    return split_prefixes(decode(raw), srun_labelled=context.srun_labelled)


def stamp_of_line(prefixed: Prefixed, default_year: int) -> Stamp:
    """The line's own timestamp, else the time its container runtime recorded."""
    stamp = parse_stamp(prefixed.message, default_year)
    if not stamp.found and prefixed.envelope_time is not None:
        return parse_stamp(prefixed.envelope_time, default_year)
    return stamp


def _stamp_of(prefixed: Prefixed, context: SourceContext) -> Stamp:
    stamp = stamp_of_line(prefixed, context.default_year)
    if stamp.year is not None:
        context.years_seen.add(stamp.year)
    return stamp


def _same_emitter(a: Attribution, b: Attribution) -> bool:
    return (a.rank, a.local_rank, a.pid) == (b.rank, b.local_rank, b.pid)


def _looked_at(data: bytes, context: SourceContext) -> _LookedAt:
    looked = context.looked_at
    if looked is None or looked.data is not data:
        looked = context.looked_at = _LookedAt(data)
    return looked


def _line_stamp(data: bytes, start: int, context: SourceContext) -> tuple[Attribution, Stamp]:
    """Who printed the line of `data` at `start`, and its own timestamp; each line is parsed once
    per chunk."""
    lines = _looked_at(data, context).lines
    found = lines.get(start)
    if found is None:
        prefixed = split(data[slice(*line_bounds(data, start))], context)
        found = lines[start] = (prefixed.who, _stamp_of(prefixed, context))
    return found


def _inherited_stamp(data: bytes, start: int, who: Attribution, context: SourceContext) -> Stamp:
    """The nearest earlier timestamp printed by the same emitter within LOOKAROUND_LINES, else
    the nearest earlier one, else the nearest later one.

    On a log whose matched lines are untimed chatter (NCCL INFO), thousands of look-backs read
    the same 200 lines again and again; it took most of a diagnosis's time. So a look-back for
    an emitter reads only the lines since that emitter's previous look-back and takes the rest
    from what that one found: the result is the same as reading all 200 lines."""
    found = _look_back(data, start, who, context)
    if found.same is not None:
        return found.same_stamp
    if found.nearest is not None:
        return found.nearest_stamp
    for following in _next_line_starts(data, start, LOOKAROUND_LINES // 4):
        _, stamp = _line_stamp(data, following, context)
        if stamp.found:
            return stamp
    return NO_STAMP


def _lines_up(data: bytes, line_start: int, start: int) -> int:
    """How many lines above the line at `start` the line at `line_start` is (1: the one just
    above)."""
    return data.count(b"\n", line_start, start)


def _look_back(data: bytes, start: int, who: Attribution, context: SourceContext) -> _Found:
    looked = _looked_at(data, context)
    emitter = (who.rank, who.local_rank, who.pid)
    before = looked.last.get(emitter)
    if before is not None and before.start == start:
        return before
    # The previous look-back's line is this emitter's and has no timestamp of its own (or it
    # would not have looked back): only the lines between the two are new.
    between = _lines_up(data, before.start, start) - 1 if before and before.start < start else -1
    limit = LOOKAROUND_LINES if between < 0 else min(between, LOOKAROUND_LINES)
    same = nearest = None
    same_stamp = nearest_stamp = NO_STAMP
    for previous in _previous_line_starts(data, start, limit):
        printed_by, stamp = _line_stamp(data, previous, context)
        if not stamp.found:
            continue
        if nearest is None:
            nearest, nearest_stamp = previous, stamp
        if _same_emitter(printed_by, who):
            same, same_stamp = previous, stamp
            break
    if same is None and 0 <= between < LOOKAROUND_LINES:
        assert before is not None
        # Above the previous look-back's line, this window is the nearer part of that one's:
        # what it found nearest is nearest here too, if still within reach.
        if before.same is not None and _lines_up(data, before.same, start) <= LOOKAROUND_LINES:
            same, same_stamp = before.same, before.same_stamp
        if (
            nearest is None
            and before.nearest is not None
            and _lines_up(data, before.nearest, start) <= LOOKAROUND_LINES
        ):
            nearest, nearest_stamp = before.nearest, before.nearest_stamp
    found = _Found(start, same, same_stamp, nearest, nearest_stamp)
    looked.last[emitter] = found
    return found


@dataclass(frozen=True, slots=True)
class _Traceback:
    lines: list[str]
    header_start: int
    """Offset of the `Traceback (most recent call last):` line in the chunk."""


def _traceback_above(
    data: bytes, start: int, who: Attribution, context: SourceContext
) -> _Traceback | None:
    """The traceback block ending just above an exception line, if there is one. An input
    that begins inside the traceback (an excerpt, a log cut at its head) gives the frames it
    holds, without the header."""
    block: list[str] = []
    first = start
    for previous in _previous_line_starts(data, start, MAX_TRACEBACK_LINES):
        prefixed = split(data[slice(*line_bounds(data, previous))], context)
        if not _same_emitter(prefixed.who, who):
            continue  # interleaved output of another rank
        message = _without_logger_header(prefixed.message)
        if message.startswith(_TRACEBACK_HEAD):
            block.append(clip(message))
            block.reverse()
            return _Traceback(block, previous)
        if not message.startswith((" ", "\t")) and message.strip():
            return None
        block.append(clip(message))
        first = previous
    if first == 0 and any(line.lstrip().startswith('File "') for line in block):
        block.reverse()
        return _Traceback(block, first)
    return None


def _without_logger_header(message: str) -> str:
    header = _REPEATED_LOGGER_HEADER.match(message)
    return message[header.end() :] if header else message


def _spawned_process(data: bytes, header_start: int, context: SourceContext) -> int | None:
    """The process index torch.multiprocessing names above a child's traceback, if any."""
    for previous in _previous_line_starts(data, header_start, 2):
        message = split(data[slice(*line_bounds(data, previous))], context).message
        if found := _SPAWN_HEADER.match(message):
            return identifier(found["index"])
        if message.strip():
            return None
    return None


def build_event(
    chunk: Chunk,
    line_start: int,
    line_number: int,
    context: SourceContext,
    hit_at: int = 0,
    *,
    with_traceback: bool = True,
) -> Event:
    """The event for the line of `chunk` starting at `line_start` (line `line_number`)."""
    event, untimed = line_event(chunk, line_start, line_number, context, hit_at)
    return completed_event(event, untimed, chunk, line_start, context, with_traceback)


def line_event(
    chunk: Chunk, line_start: int, line_number: int, context: SourceContext, hit_at: int = 0
) -> tuple[Event, bool]:
    """What the line itself says: its text, who printed it and its own timestamp; and whether
    it prints none. The rest (`completed_event`: the traceback above it, a timestamp looked for
    around it) costs most of a matched line; a caller that keeps only some matches (the first
    and last few of a signature repeated thousands of times) completes those alone."""
    data = chunk.data
    start, end = line_bounds(data, line_start)
    raw = data[start:end]
    prefixed = split(raw, context)
    who = prefixed.who.merged_over(context.who)
    if who.rank is None and (stated := rank_stated_by_c10d(prefixed.message)) is not None:
        who = Attribution(stated, who.local_rank, who.host, who.pid)
    if who.host is None and (syslog := _SYSLOG_HOST.match(prefixed.message)):
        who = Attribution(who.rank, who.local_rank, syslog["host"], who.pid)
    stamp = _stamp_of(prefixed, context)
    event = Event(
        source=context.name,
        line=line_number,
        offset=chunk.base_offset + start,
        text=clip(decode(raw), hit_at),
        who=who,
        time=stamp.epoch,
        boot_seconds=stamp.boot_seconds,
    )
    return event, not stamp.found


def completed_event(
    event: Event,
    untimed: bool,
    chunk: Chunk,
    line_start: int,
    context: SourceContext,
    with_traceback: bool = True,
) -> Event:
    """`line_event`'s event with the traceback block above its line as context (and the
    spawned process that printed it), and, when the line prints no timestamp and nothing else
    timed it, the nearest timestamp around it. `chunk` must be the event's."""
    data = chunk.data
    start = line_bounds(data, line_start)[0]
    if not with_traceback and not (untimed and event.time is None):
        return event  # nothing to add: no line but its own is read
    printed_by = split(data[slice(*line_bounds(data, line_start))], context).who
    traceback = _traceback_above(data, start, printed_by, context) if with_traceback else None
    if traceback is not None:
        who = event.who
        if who.local_rank is None:
            index = _spawned_process(data, traceback.header_start, context)
            if index is not None:
                who = Attribution(who.rank, index, who.host, who.pid)
        event = replace(event, who=who, context=tuple(traceback.lines))
    if untimed and event.time is None:
        stamp = _inherited_stamp(data, start, printed_by, context)
        event = replace(
            event, time=stamp.epoch, time_inferred=stamp.found, boot_seconds=stamp.boot_seconds
        )
    return event
