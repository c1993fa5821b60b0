"""The job's time window: host records from before the job began are history, not causes.

Consumes the matches and when each job input began; produces the matches that can belong to
this job and the number set aside. Kernel logs and telemetry hold the whole life of a host
(an old Xid, a boot-time link-down); a record more than `HOST_LOG_LEAD_S` older than the first
line any job input printed cannot have caused this job's failure. Records without a wall-clock
time (plain dmesg) cannot be placed and are kept.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from denpex.events import Match
from denpex.signatures.signature import Role

HOST_LOG_KINDS = frozenset({"kernel_log", "telemetry"})
HOST_LOG_LEAD_S = 600.0


@dataclass(frozen=True)
class Windowed:
    matches: list[Match]
    set_aside: int
    job_start: float | None


def job_start(first_times: Iterable[tuple[str, float | None]]) -> float | None:
    """Earliest first timestamp over the inputs that the job itself wrote."""
    times = [t for kind, t in first_times if kind not in HOST_LOG_KINDS and t is not None]
    return min(times, default=None)


def within_job(matches: list[Match], host_log_sources: set[str], start: float | None) -> Windowed:
    if start is None or not host_log_sources:
        return Windowed(matches, 0, start)
    kept = [
        m
        for m in matches
        if m.role is Role.context
        or m.event.source not in host_log_sources
        or m.event.time is None
        or m.event.time >= start - HOST_LOG_LEAD_S
    ]
    return Windowed(kept, len(matches) - len(kept), start)
