"""Per-host clock offsets from events that happen together on every rank.

Consumes matches whose signatures declare a `clock_anchor` (the same training step finishing on
every rank of a synchronous job, a collective that every waiting rank started together, the
end of a rendezvous); produces an offset and an uncertainty per host. A host's offset is what it
adds to true time: corrected = printed - offset. Offsets are relative to the reference host (the
one with most anchors); a host that shares no anchor with the others keeps offset 0 and says so
by an uncertainty of None.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from denpex.events import Match
from denpex.ingest.numbers import identifier

# Ranks of a synchronous job finish the same step within milliseconds of each other; this floor
# keeps the reported uncertainty honest when the anchors agree perfectly.
ANCHOR_JITTER_S = 0.05
_ITERATIONS = 50


@dataclass(frozen=True, slots=True)
class HostClock:
    offset_s: float
    uncertainty_s: float | None
    anchors: int


class _Blank(dict[str, str]):
    def __missing__(self, key: str) -> str:
        raise KeyError(key)


def anchor_key(match: Match) -> tuple[str, float] | None:
    """The anchor's key and the moment it marks on the printing host's clock, if usable."""
    anchor = match.signature.clock_anchor
    event = match.event
    if anchor is None or event.time is None or event.time_inferred or event.host is None:
        return None
    try:
        key = anchor.key.format_map(_Blank(match.captures))
    except (KeyError, ValueError):
        return None
    moment = event.time
    if anchor.minus_ms is not None:
        elapsed = identifier(match.captures.get(anchor.minus_ms))
        if elapsed is None or elapsed < 0:
            return None
        moment -= elapsed / 1000.0
    return f"{match.signature.id}:{key}", moment


def _anchor_times(matches: Iterable[Match]) -> dict[str, dict[str, float]]:
    """key -> host -> median moment of that anchor on that host."""
    collected: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for match in matches:
        keyed = anchor_key(match)
        if keyed is not None:
            collected[keyed[0]][match.event.host or ""].append(keyed[1])
    return {
        key: {host: statistics.median(times) for host, times in hosts.items()}
        for key, hosts in collected.items()
        if len(hosts) >= 2
    }


def estimate_offsets(matches: Iterable[Match]) -> dict[str, HostClock]:
    """Offsets of every host that shares anchors with another; {} when there is nothing to go on."""
    by_key = _anchor_times(matches)
    pair_diffs: dict[tuple[str, str], list[float]] = defaultdict(list)
    anchors_per_host: dict[str, int] = defaultdict(int)
    for hosts in by_key.values():
        names = sorted(hosts)
        for host in names:
            anchors_per_host[host] += 1
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                pair_diffs[(a, b)].append(hosts[a] - hosts[b])
    if not pair_diffs:
        return {}
    reference = max(sorted(anchors_per_host), key=lambda h: anchors_per_host[h])
    edges = {pair: statistics.median(diffs) for pair, diffs in pair_diffs.items()}
    offsets = _solve(edges, reference)
    pairs_of: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for pair in pair_diffs:  # each host's own pairs: 512 hosts share some 131,000
        pairs_of[pair[0]].append(pair)
        pairs_of[pair[1]].append(pair)
    return {
        host: HostClock(
            offset_s=round(offset, 6),
            uncertainty_s=_uncertainty(offsets, {p: pair_diffs[p] for p in pairs_of[host]}),
            anchors=anchors_per_host[host],
        )
        for host, offset in sorted(offsets.items())
    }


def _solve(edges: dict[tuple[str, str], float], reference: str) -> dict[str, float]:
    """Offsets minimising the squared disagreement with every pairwise median difference."""
    neighbours: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for (a, b), diff in edges.items():  # diff = offset[a] - offset[b]
        neighbours[a].append((b, diff))
        neighbours[b].append((a, -diff))
    reachable = _component(neighbours, reference)
    offsets = dict.fromkeys(reachable, 0.0)
    for _ in range(_ITERATIONS):
        for host in sorted(reachable):
            if host == reference:
                continue
            estimates = [offsets[other] + diff for other, diff in neighbours[host]]
            offsets[host] = statistics.fmean(estimates)
    return offsets


def _component(neighbours: dict[str, list[tuple[str, float]]], start: str) -> set[str]:
    seen = {start}
    frontier = [start]
    while frontier:
        host = frontier.pop()
        for other, _ in neighbours[host]:
            if other not in seen:
                seen.add(other)
                frontier.append(other)
    return seen


def _uncertainty(offsets: dict[str, float], own_pairs: dict[tuple[str, str], list[float]]) -> float:
    """The spread of a host's anchor differences around the solved offsets, over the pairs it
    is in (`own_pairs`)."""
    residuals: list[float] = []
    for (a, b), diffs in own_pairs.items():
        if a not in offsets or b not in offsets:
            continue
        predicted = offsets[a] - offsets[b]
        residuals.extend(abs(d - predicted) for d in diffs)
    if not residuals:
        return ANCHOR_JITTER_S
    spread = statistics.median(residuals)
    return round(max(ANCHOR_JITTER_S, 1.4826 * spread / max(1, len(residuals)) ** 0.5), 6)
