"""Hardware and host records that bear on a candidate: support, never proof.

Consumes candidates, the signature matches found among the inputs and the rank->host mapping;
produces the candidates with their hosts filled in, `support` attached and confidence moved.
A record counts for a candidate when it comes from a signature of the `hardware` category (Xid,
NVLink, PCIe AER, ...) or of a class taxonomy.yaml marks `host_record` (host_oom), sits on the
host of one of the candidate's ranks (`event.host`: from the file's path or a capture, never
guessed), and falls within the window around the hang's onset. A record whose time is unknown
counts for less; one far from the hang is shown but not counted. When the mapping names a rank's
GPU and the record names one too, a record on another GPU of the same host counts for less than
one on the rank's own.

Peers' log lines saying a connection closed or a collective timed out are attached to
`stopped_reporting` candidates as context: they tell a process that exited from one that hung,
and move no confidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from denpex.events import Match
from denpex.hang.dumps import utc_at
from denpex.hang.hosts import RankHosts
from denpex.hang.models import Candidate, CulpritKind, SupportRecord
from denpex.taxonomy import Category, Relay

SAME_GPU_OR_HOST = 4.0  # odds multiplier: a record in time on the candidate's own GPU or host
OTHER_GPU_SAME_HOST = 1.5
TIME_UNKNOWN = 1.5
RIVAL_ELSEWHERE = 0.8  # a counted record on a host of none of the candidate's ranks
MAX_SUPPORT = 8
MAX_PEER_LINES = 3
PEER_STATE = {Relay.peer: "exited", Relay.waiting: "unresponsive"}
"""What a peer's relayed symptom says of the silent process (taxonomy.yaml's `relay`)."""


@dataclass(frozen=True)
class Window:
    onset_s: float | None
    seconds: float


def is_host_record(match: Match) -> bool:
    return match.signature.category is Category.hardware or match.signature.traits.host_record


def correlate(
    candidates: Sequence[Candidate],
    records: Sequence[Match],
    hosts: RankHosts,
    window: Window,
) -> list[Candidate]:
    host_records = [m for m in records if is_host_record(m) and m.event.host]
    peer_lines = [m for m in records if m.signature.traits.relay in PEER_STATE]
    correlated = []
    for candidate in candidates:
        own_hosts = sorted({h for r in candidate.ranks if (h := hosts.host(r))})
        support: list[SupportRecord] = []
        factor = 1.0
        for match in host_records:
            if match.event.host not in own_hosts:
                continue
            record, weight = _support(match, candidate, hosts, window)
            support.append(record)
            if record.counted:
                factor = max(factor, weight)
        if factor == 1.0 and _rival_counted(host_records, own_hosts, window):
            factor = RIVAL_ELSEWHERE
        if candidate.kind is CulpritKind.stopped_reporting:
            support += _peer_context(peer_lines)
        correlated.append(
            candidate.model_copy(
                update={
                    "hosts": own_hosts,
                    "support": support[:MAX_SUPPORT],
                    "confidence": _update(candidate.confidence, factor),
                }
            )
        )
    return correlated


def _support(
    match: Match, candidate: Candidate, hosts: RankHosts, window: Window
) -> tuple[SupportRecord, float]:
    host = match.event.host or ""
    on_host = [r for r in candidate.ranks if hosts.host(r) == host]
    gpu = match.captures.get("pci") or match.captures.get("gpu")
    rank_gpus = {r: g for r in on_host if (g := hosts.gpu(r))}
    weight = SAME_GPU_OR_HOST
    relation = f"on {host}, the host of rank(s) {', '.join(map(str, on_host))}"
    if gpu and rank_gpus:
        same = [r for r, g in rank_gpus.items() if _same_device(g, gpu)]
        if same:
            relation = f"on GPU {gpu} of {host}, the GPU of rank(s) {', '.join(map(str, same))}"
        else:
            weight = OTHER_GPU_SAME_HOST
            relation += f", but GPU {gpu}, not theirs ({', '.join(sorted(rank_gpus.values()))})"
    counted, reason, in_time = _timing(match, window)
    if counted and not in_time:
        weight = min(weight, TIME_UNKNOWN)
    return (
        SupportRecord(
            signature_id=match.signature.id,
            failure_class=match.signature.failure_class,
            category=str(match.signature.category),
            host=host,
            gpu=gpu,
            relation=relation,
            counted=counted,
            reason=reason,
            source=match.event.source,
            line=match.event.line,
            time=_when(match.event.time, match.event.time_inferred),
            text=match.event.text[:500],
        ),
        weight,
    )


def _timing(match: Match, window: Window) -> tuple[bool, str, bool]:
    """(counted, why, whether its time is known and inside the window)."""
    when = match.event.time
    if when is None or match.event.time_inferred or window.onset_s is None:
        return True, "its time relative to the hang is unknown; counted weakly", False
    delta = when - window.onset_s
    text = f"{abs(delta):.0f} s {'after' if delta >= 0 else 'before'} the hang began"
    if abs(delta) > window.seconds:
        return False, f"{text}: outside the {window.seconds:.0f} s window, not counted", False
    return True, text, True


def _rival_counted(records: Sequence[Match], own_hosts: list[str], window: Window) -> bool:
    return any(
        m.event.host not in own_hosts and _timing(m, window)[2] for m in records if m.event.host
    )


def _peer_context(peer_lines: Sequence[Match]) -> list[SupportRecord]:
    shown: list[SupportRecord] = []
    for kind in ("exited", "unresponsive"):
        lines = [m for m in peer_lines if PEER_STATE.get(m.signature.traits.relay) == kind]
        for match in lines[:MAX_PEER_LINES]:
            meaning = (
                "a peer saw its connection close: the silent process exited or was killed"
                if kind == "exited"
                else "a peer timed out: the silent process was alive but not progressing, "
                "or unreachable"
            )
            shown.append(
                SupportRecord(
                    signature_id=match.signature.id,
                    failure_class=match.signature.failure_class,
                    category=str(match.signature.category),
                    host=match.event.host,
                    relation=f"printed by rank {match.event.rank}"
                    if match.event.rank is not None
                    else "printed by a peer",
                    counted=False,
                    reason=f"context, moves no confidence: {meaning}",
                    source=match.event.source,
                    line=match.event.line,
                    time=_when(match.event.time, match.event.time_inferred),
                    text=match.event.text[:500],
                )
            )
    return shown


def _same_device(a: str, b: str) -> bool:
    """PCI addresses compare without domain padding or function; indexes compare as given."""

    def norm(value: str) -> str:
        value = value.lower().removeprefix("pci:")
        parts = value.split(":")
        if len(parts) == 3:
            domain, bus, rest = parts
            return f"{int(domain, 16):04x}:{bus}:{rest.split('.')[0]}"
        return value

    try:
        return norm(a) == norm(b)
    except ValueError:
        return a == b


def _update(probability: float, factor: float) -> float:
    """Bayes on odds: multiply the odds by `factor`; stay inside [0.01, 0.99]."""
    if factor == 1.0:
        return probability
    odds = probability / (1.0 - probability) * factor
    return round(min(0.99, max(0.01, odds / (1.0 + odds))), 3)


def _when(seconds: float | None, inferred: bool) -> datetime | None:
    return None if inferred else utc_at(seconds)
