"""Fills in global ranks from mappings the evidence itself states.

Consumes all matches; produces the same matches with `rank` filled where an explicit mapping
exists: an event that names both a local rank and a global rank on one host (torchrun's tee
output `[default2]:[rank2]: ...`, the failure summary's `rank : 9 (local_rank: 1)` with its
host) maps that host's local rank. Nothing is inferred from a local rank alone.
"""

from __future__ import annotations

from dataclasses import replace

from denpex.events import Attribution, Match


def _mapping(matches: list[Match]) -> dict[tuple[str | None, int], int | None]:
    """(host, local rank) -> global rank; None where the evidence disagrees with itself."""
    mapping: dict[tuple[str | None, int], int | None] = {}
    for match in matches:
        who = match.event.who
        if who.rank is None or who.local_rank is None:
            continue
        key = (who.host, who.local_rank)
        if key in mapping and mapping[key] != who.rank:
            mapping[key] = None
        else:
            mapping.setdefault(key, who.rank)
    return mapping


def resolve_ranks(matches: list[Match]) -> list[Match]:
    mapping = _mapping(matches)
    if not mapping:
        return matches
    resolved: list[Match] = []
    for match in matches:
        who = match.event.who
        if who.rank is None and who.local_rank is not None:
            rank = mapping.get((who.host, who.local_rank))
            if rank is not None:
                filled = Attribution(rank, who.local_rank, who.host, who.pid)
                match = match.with_event(replace(match.event, who=filled))
        resolved.append(match)
    return resolved
