"""The culprit the symptoms point at, when no root cause is in evidence.

Consumes the ordered matches; produces a `Culprit` or None. Ranks that time out waiting in a
collective are victims: the suspects are the ranks that never reached it. With NCCL's watchdog
the sequence number says where each rank stood (a rank that timed out at a lower SeqNum never
reached the others' collective); with Gloo, which names no sequence, the suspects are the ranks
seen in the job that reported no timeout at all. When every rank timed out at the same point,
the evidence does not determine a culprit, and the answer says so.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from denpex.events import Match
from denpex.ingest.numbers import identifier
from denpex.match.signature import Role

_WAITING_CLASSES = frozenset({"collective_timeout"})
_PEER_CLASSES = frozenset({"peer_process_died"})
# Symptoms that only relay a failure elsewhere (a peer gone, a collective stuck, NCCL passing an
# error on); any other symptom (a DataLoader worker found dead) happened in the process itself
# and is closer to the cause.
_RELAY_CLASSES = _WAITING_CLASSES | _PEER_CLASSES | {"nccl_internal_error"}
# Captures in which PyTorch itself names the ranks behind a stall (monitoredBarrier, the NCCL
# desync report): stated evidence, preferred over anything inferred.
NAMED_SUSPECTS = ("suspect_ranks", "peer_ranks")
_RANK_LIST = re.compile(r"\d+")


@dataclass(frozen=True)
class Culprit:
    failure_class: str
    suspects: tuple[int, ...]
    waiting: tuple[int, ...]
    seq: str | None
    evidence: tuple[Match, ...]

    @property
    def determined(self) -> bool:
        return bool(self.suspects)

    def headline(self) -> str:
        prefix = {
            "collective_timeout": "Collective stalled: ",
            "peer_process_died": "A peer process died: ",
        }.get(self.failure_class, "Symptoms only: ")
        return prefix + self.explanation()

    def explanation(self) -> str:
        waiting = _ranks(self.waiting)
        at = f" at collective SeqNum {self.seq}" if self.seq else ""
        if self.failure_class not in ("collective_timeout", "peer_process_died"):
            if self.suspects:
                return (
                    f"only symptoms are in evidence ({self.failure_class}, which rank "
                    f"{_ranks(self.suspects)} reported of itself); no root-cause record says why"
                )
            return (
                f"only symptoms are in evidence ({self.failure_class}, on ranks {waiting}); "
                "no root-cause record names where it began"
            )
        if self.failure_class == "peer_process_died":
            if not self.suspects:
                return (
                    f"ranks {waiting} lost their connection to a peer and no rank is in "
                    "evidence as the one that died; the evidence does not determine it"
                )
            return (
                f"ranks {waiting} lost their connection to a peer; rank(s) "
                f"{_ranks(self.suspects)} reported nothing and are the likely dead peer(s)"
            )
        if not self.suspects:
            return (
                f"ranks {waiting} timed out{at} and no rank is in evidence as behind them; "
                "the evidence does not determine a culprit"
            )
        return f"ranks {waiting} timed out{at} waiting for rank(s) {_ranks(self.suspects)}"


def _ranks(ranks: Sequence[int]) -> str:
    return ", ".join(str(r) for r in ranks) or "none"


def ranks_seen(matches: Sequence[Match]) -> set[int]:
    return {m.event.rank for m in matches if m.event.rank is not None}


def infer_culprit(matches: Sequence[Match]) -> Culprit | None:
    symptoms = [m for m in matches if m.role is Role.symptom]
    if not symptoms:
        return None
    named = _named(symptoms)
    if named is not None:
        return named
    timeouts = [m for m in symptoms if m.signature.failure_class in _WAITING_CLASSES]
    if timeouts:
        return _from_timeouts(timeouts, ranks_seen(matches))
    local = [m for m in symptoms if m.signature.failure_class not in _RELAY_CLASSES]
    if local:
        return _first_symptom_class(local, happened_where_reported=True)
    peers = [m for m in symptoms if m.signature.failure_class in _PEER_CLASSES]
    if peers:
        reporters = {m.event.rank for m in peers if m.event.rank is not None}
        silent = sorted(ranks_seen(matches) - reporters)
        return Culprit(
            "peer_process_died", tuple(silent), tuple(sorted(reporters)), None, tuple(peers)
        )
    return _first_symptom_class(symptoms)


def _named(symptoms: list[Match]) -> Culprit | None:
    """A culprit the logs name outright, e.g. "Ranks 1, 2 failed to pass monitoredBarrier"."""
    naming = [m for m in symptoms if any(name in m.captures for name in NAMED_SUSPECTS)]
    if not naming:
        return None
    suspects: set[int] = set()
    for match in naming:
        for name in NAMED_SUSPECTS:
            stated = (identifier(t) for t in _RANK_LIST.findall(match.captures.get(name, "")))
            suspects |= {n for n in stated if n is not None}
    waiting = {m.event.rank for m in naming if m.event.rank is not None} - suspects
    first = naming[0]
    return Culprit(
        failure_class=first.signature.failure_class or "collective_timeout",
        suspects=tuple(sorted(suspects)),
        waiting=tuple(sorted(waiting)),
        seq=first.captures.get("seq") or first.captures.get("collective_number"),
        evidence=tuple(naming),
    )


def _first_symptom_class(
    symptoms: list[Match], *, happened_where_reported: bool = False
) -> Culprit:
    """Only symptoms of another kind: their class. A relayed error (NCCL's) names no culprit; a
    symptom of the reporting process itself (its DataLoader worker died) names that process's
    rank when only one rank reports it."""
    timed = [m for m in symptoms if m.event.time is not None]
    first = min(timed, key=lambda m: m.event.time or 0.0) if timed else symptoms[0]
    same = [m for m in symptoms if m.signature.failure_class == first.signature.failure_class]
    reporters = sorted({m.event.rank for m in same if m.event.rank is not None})
    located = happened_where_reported and len(reporters) == 1
    return Culprit(
        failure_class=first.signature.failure_class or "unknown",
        suspects=tuple(reporters) if located else (),
        waiting=tuple(reporters),
        seq=None,
        evidence=tuple(same),
    )


def _from_timeouts(timeouts: list[Match], seen: set[int]) -> Culprit:
    lowest_seq: dict[int, int] = {}
    for match in timeouts:
        rank, seq = match.event.rank, identifier(match.captures.get("seq"))
        if rank is None or seq is None or seq < 0:
            continue
        lowest_seq[rank] = min(seq, lowest_seq.get(rank, seq))
    waiting = {m.event.rank for m in timeouts if m.event.rank is not None}
    common_seq = None
    behind: set[int] = set()
    if lowest_seq:
        common_seq, _ = Counter(lowest_seq.values()).most_common(1)[0]
        behind = {rank for rank, seq in lowest_seq.items() if seq < common_seq}
    suspects = sorted(behind | (seen - waiting))
    return Culprit(
        failure_class="collective_timeout",
        suspects=tuple(suspects),
        waiting=tuple(sorted(waiting - behind)),
        seq=None if common_seq is None else str(common_seq),
        evidence=tuple(timeouts),
    )
