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


def build_timeline(matches: list[Match]) -> OrderedTimeline:
    matches, notes = resolve_ranks(matches)
    clocks = estimate_offsets(matches)
    corrected = [_corrected(m, clocks) for m in matches]
    before = _abnormal_order(matches)
    after = _abnormal_order(corrected)
    reordered = sum(1 for a, b in zip(before, after, strict=True) if a != b)
    return OrderedTimeline(sorted(corrected, key=order_key), clocks, reordered, notes)
