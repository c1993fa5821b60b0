"""Which host (and GPU) each rank ran on, only as the evidence states it.

Consumes an explicit mapping (a file the user supplies, or the caller's own), the dumps' paths
(`node07/fr_dump_3`) and log matches that name both a rank and a host (a line in
`node07/rank3.log`, torchelastic's failure summary); produces `RankHosts`. Nothing is guessed:
not from rank numbering, not from ranks per node. Where sources disagree about a rank, the
explicit mapping wins; disagreement between the other sources drops the rank and says so.

Mapping file: one `RANK HOST [GPU]` per line (GPU as a PCI address or index, optional), `#`
comments allowed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from denpex.errors import InputError
from denpex.events import Match

_LINE = re.compile(r"^\s*(\d{1,7})\s+(\S{1,253})(?:\s+(\S{1,64}))?\s*$")


@dataclass(frozen=True)
class Location:
    host: str
    gpu: str | None = None


@dataclass(frozen=True)
class RankHosts:
    locations: Mapping[int, Location] = field(default_factory=dict)
    sources: Mapping[int, str] = field(default_factory=dict)
    """How each rank's host is known: 'mapping', 'dump path' or a log source."""
    conflicts: tuple[str, ...] = ()

    def host(self, rank: int) -> str | None:
        location = self.locations.get(rank)
        return location.host if location else None

    def gpu(self, rank: int) -> str | None:
        location = self.locations.get(rank)
        return location.gpu if location else None


def parse_mapping(text: str, name: str = "mapping") -> dict[int, Location]:
    """The `RANK HOST [GPU]` lines of a mapping file. Raises InputError on a malformed line."""
    mapping: dict[int, Location] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0]
        if not line.strip():
            continue
        found = _LINE.match(line)
        if found is None:
            raise InputError(f"{name}:{number}: expected 'RANK HOST [GPU]', got {raw[:80]!r}")
        rank = int(found.group(1))
        if rank in mapping:
            raise InputError(f"{name}:{number}: rank {rank} is mapped twice")
        mapping[rank] = Location(found.group(2), found.group(3))
    return mapping


def rank_hosts(
    explicit: Mapping[int, Location],
    dump_hosts: Mapping[int, tuple[str, str]],
    records: Iterable[Match],
) -> RankHosts:
    """`dump_hosts`: rank -> (host, dump path) from the dumps' own paths."""
    stated: dict[int, dict[str, str]] = {}
    for rank, (host, source) in dump_hosts.items():
        stated.setdefault(rank, {}).setdefault(host, f"dump path {source}")
    for match in records:
        rank, host = match.event.rank, match.event.host
        if rank is not None and host:
            stated.setdefault(rank, {}).setdefault(host, f"{match.event.source}:{match.event.line}")
    locations = {rank: location for rank, location in explicit.items()}
    sources = {rank: "mapping" for rank in explicit}
    conflicts: list[str] = []
    for rank, hosts in sorted(stated.items()):
        if rank in explicit:
            continue
        if len(hosts) > 1:
            claims = "; ".join(f"{h} ({where})" for h, where in sorted(hosts.items()))
            conflicts.append(f"rank {rank}: the evidence names several hosts ({claims}); unmapped")
            continue
        ((host, where),) = hosts.items()
        locations[rank] = Location(host)
        sources[rank] = where
    return RankHosts(locations, sources, tuple(conflicts))
