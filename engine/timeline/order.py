"""Puts the matches of every input on one clock, in causal order.

Consumes all matches and the per-host clock estimates; produces the matches with corrected
times, sorted, and how many abnormal events changed place because of the correction. A constant
offset per host never reorders events printed on the same host.
"""

from __future__ import annotations

from dataclasses import dataclass

from denpex.events import Match
from denpex.signatures.signature import Role
from denpex.timeline.clock import HostClock, estimate_offsets
from denpex.timeline.identity import resolve_ranks


@dataclass(frozen=True)
class OrderedTimeline:
    matches: list[Match]
    clocks: dict[str, HostClock]
    reordered: int
    notes: list[str]
    """Assumptions the timeline made, for the diagnosis's warnings."""


def order_key(match: Match) -> tuple[int, float, str, int]:
    """Timed events first by time; untimed ones after, in input order."""
    event = match.event
    if event.time is None:
        return (1, 0.0, event.source, event.offset)
    return (0, event.time, event.source, event.offset)


def _corrected(match: Match, clocks: dict[str, HostClock]) -> Match:
    event = match.event
    clock = clocks.get(event.host or "")
    if clock is None or event.time is None or clock.offset_s == 0.0:
        return match
    return match.with_event(event.with_time(event.time - clock.offset_s))


def _abnormal_order(matches: list[Match]) -> list[tuple[str, int]]:
    return [
        (m.event.source, m.event.offset)
        for m in sorted(matches, key=order_key)
        if m.role is not Role.context
    ]


INFERRED_SLACK_S = 1.0
"""How far an inferred time may run past the next stamped line of its input before the file's
order is taken over it (stamps print at second resolution in many formats)."""


def bound_inferred_times(matches: list[Match]) -> tuple[list[Match], list[str]]:
    """An unstamped line's time is inherited from a stamped line above it, possibly another
    program's (a launcher's header over a Python traceback). Where a later line of the same input
    carries its own stamp earlier than that, the inherited time is the doubtful one: the line was
    printed before the later one, so its time is bounded by that stamp. Own stamps are never
    changed (a file that concatenates several ranks' logs keeps their real order)."""
    by_source: dict[str, list[int]] = {}
    for index, match in enumerate(matches):
        if match.event.time is not None:
            by_source.setdefault(match.event.source, []).append(index)
    bounded = list(matches)
    notes: list[str] = []
    for source, indexes in by_source.items():
        indexes.sort(key=lambda i: matches[i].event.offset)
        next_stamp: float | None = None  # the nearest stamped line below, walking upwards
        moved = 0
        for i in reversed(indexes):
            event = matches[i].event
            time = event.time
            assert time is not None
            if not event.time_inferred:
                next_stamp = time
            elif next_stamp is not None and time > next_stamp + INFERRED_SLACK_S:
                bounded[i] = matches[i].with_event(event.with_time(next_stamp))
                moved += 1
        if moved:
            notes.append(
                f"{source}: {moved} line(s) without a stamp of their own inherited a time later "
                "than a stamped line below them; they were placed before it, in the file's order"
            )
    return bounded, notes


def build_timeline(matches: list[Match]) -> OrderedTimeline:
    matches, notes = resolve_ranks(matches)
    matches, bounded = bound_inferred_times(matches)
    notes = [*notes, *bounded]
    clocks = estimate_offsets(matches)
    corrected = [_corrected(m, clocks) for m in matches]
    before = _abnormal_order(matches)
    after = _abnormal_order(corrected)
    reordered = sum(1 for a, b in zip(before, after, strict=True) if a != b)
    return OrderedTimeline(sorted(corrected, key=order_key), clocks, reordered, notes)
