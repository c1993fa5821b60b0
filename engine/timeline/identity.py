"""Fills in global ranks from mappings the evidence itself states.

Consumes all matches; produces the same matches with `rank` filled where an explicit mapping
exists: an event that names both a local rank and a global rank on one host (torchrun's tee
output `[default2]:[rank2]: ...`, the failure summary's `rank : 9 (local_rank: 1)` with its
host) maps that host's local rank; one that names a rank and a pid maps that pid, so a kernel
line about pid 48213 (an OOM kill, an Xid) is attributed to the rank that ran as 48213. Only
when every record comes from one node, and none contradicts it, is a local rank taken as the
rank (on one node they are the same); that assumption is reported, never silent.
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
    _single_host_fallback(mapping)
    return mapping


def _single_host_fallback(mapping: dict[tuple[str | None, int], int | None]) -> None:
    """When every mapping comes from one host, events that name no host are from it too."""
    if len({host for host, _ in mapping}) == 1:
        for (_, key), rank in list(mapping.items()):
            mapping.setdefault((None, key), rank)


def _pid_mapping(matches: list[Match]) -> dict[tuple[str | None, int], int | None]:
    """(host, pid) -> global rank, and (None, pid) when every mapped pid is on one host."""
    mapping: dict[tuple[str | None, int], int | None] = {}
    for match in matches:
        who = match.event.who
        if who.rank is None or who.pid is None:
            continue
        key = (who.host, who.pid)
        mapping[key] = who.rank if mapping.get(key, who.rank) == who.rank else None
    _single_host_fallback(mapping)
    return mapping


def _rank_for(who: Attribution, local: dict, pids: dict) -> int | None:
    if who.local_rank is not None and (rank := local.get((who.host, who.local_rank))) is not None:
        return rank
    if who.pid is not None:
        return pids.get((who.host, who.pid), pids.get((None, who.pid)))
    return None


SINGLE_NODE_NOTE = (
    "global ranks were taken from local ranks: every record comes from one node and none "
    "states a rank that differs from its local rank"
)


def _single_node(matches: list[Match]) -> bool:
    """True when the evidence shows one node only, and nothing contradicts rank = local rank."""
    if len({m.event.host for m in matches if m.event.host is not None}) > 1:
        return False
    for match in matches:
        who = match.event.who
        if who.rank is not None and who.local_rank is not None and who.rank != who.local_rank:
            return False
    return any(m.event.who.local_rank is not None for m in matches)


def resolve_ranks(matches: list[Match]) -> tuple[list[Match], list[str]]:
    """The matches with global ranks filled in, and a note for each assumption it made."""
    local, pids = _mapping(matches), _pid_mapping(matches)
    single_node = _single_node(matches)
    notes: list[str] = []
    resolved: list[Match] = []
    for match in matches:
        who = match.event.who
        rank = _rank_for(who, local, pids) if who.rank is None else None
        if who.rank is None and rank is None and single_node and who.local_rank is not None:
            rank = who.local_rank
            if not notes:
                notes.append(SINGLE_NODE_NOTE)
        if rank is not None:
            filled = Attribution(rank, who.local_rank, who.host, who.pid)
            match = match.with_event(replace(match.event, who=filled))
        resolved.append(match)
    return resolved, notes


MAX_WORLD_SIZE = 1 << 20
"""Past every job that exists; a larger 'world' comes from a number in a name, not a job."""
SPARSEST_EVIDENCE = 64
"""How many ranks may lie unseen for each rank in evidence before the highest is doubted."""


def world_size_from_ranks(ranks: set[int]) -> int | None:
    """The world size the ranks in evidence imply (the highest plus one), or None when the
    highest is implausible: past `MAX_WORLD_SIZE`, or so far above the others that it more likely
    comes from a number in a file name (`fr_dump_30000000`) than from a job that large."""
    if not ranks:
        return None
    highest = max(ranks)
    if highest >= MAX_WORLD_SIZE or highest + 1 > SPARSEST_EVIDENCE * len(ranks):
        return None
    return highest + 1
