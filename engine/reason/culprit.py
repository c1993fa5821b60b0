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
from dataclasses import dataclass, replace

from denpex.events import Match
from denpex.ingest.numbers import identifier
from denpex.models import RankBasis
from denpex.reason.origin import (
    Finding,
    absent_from_symptoms,
    basis_of,
    call_site,
    crossed_sequences,
    narrow,
    odd_one_out,
    ranks_in,
    split_calls,
)
from denpex.signatures.signature import Role
from denpex.taxonomy import Relay, divergent_calls_class, traits

# Symptoms that only relay a failure elsewhere (taxonomy.yaml's `relay`: a peer gone, a
# collective stuck, NCCL passing an error on); any other symptom (a DataLoader worker found
# dead) happened in the process itself and is closer to the cause.
_HEADLINE = {Relay.waiting: "Collective stalled: ", Relay.peer: "A peer process died: "}
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
    finding: Finding | None = None
    """How the suspect was found, or why several remain (`origin.py`)."""

    @property
    def determined(self) -> bool:
        return bool(self.suspects)

    @property
    def relay(self) -> Relay | None:
        return traits(self.failure_class).relay

    def headline(self) -> str:
        if self.diverged:
            return "Collectives differ: " + self.explanation()
        return _HEADLINE.get(self.relay, "Symptoms only: ") + self.explanation()  # type: ignore[arg-type]

    @property
    def diverged(self) -> bool:
        """The ranks' own records show different calls at one point (one odd rank, or two
        sides): the mismatch is observed, not inferred from which ranks stopped reporting."""
        return self.finding is not None and self.failure_class == divergent_calls_class()

    def explanation(self) -> str:
        waiting = _ranks(self.waiting)
        at = f" at collective SeqNum {self.seq}" if self.seq else ""
        if self.diverged and self.finding is not None:
            observed = self.finding.evidence or self.finding.reason
            return f"ranks {waiting} timed out{at}; {observed}" if self.waiting else observed
        if self.relay not in _HEADLINE:
            if self.suspects:
                return (
                    f"only symptoms are in evidence ({self.failure_class}, which rank "
                    f"{_ranks(self.suspects)} reported of itself); no root-cause record says why"
                )
            where = f"on ranks {waiting}" if self.waiting else "no line names a rank"
            return (
                f"only symptoms are in evidence ({self.failure_class}, {where}); "
                "no root-cause record names where it began"
            )
        if self.relay is Relay.peer:
            lost = (
                f"ranks {waiting} lost their connection to a peer"
                if self.waiting
                else "a process lost its connection to a peer (no line names its rank)"
            )
            if not self.suspects:
                return (
                    f"{lost} and no rank is in evidence as the one that died; the evidence "
                    "does not determine it"
                )
            return (
                f"{lost}; rank(s) {_ranks(self.suspects)} reported nothing and are the likely "
                "dead peer(s)"
            )
        stalled, them = (
            (f"ranks {waiting} timed out{at}", "them")
            if self.waiting
            else (f"a process waited in a collective{at} (no line names its rank)", "it")
        )
        if not self.suspects:
            return (
                f"{stalled} and no rank is in evidence as behind {them}; the evidence does not "
                "determine a culprit"
            )
        return f"{stalled}{'' if self.waiting else ','} waiting for rank(s) {_ranks(self.suspects)}"


def _ranks(ranks: Sequence[int]) -> str:
    return ", ".join(str(r) for r in ranks) or "none"


def ranks_seen(matches: Sequence[Match]) -> set[int]:
    return ranks_in(matches)


def infer_culprit(matches: Sequence[Match]) -> Culprit | None:
    symptoms = [m for m in matches if m.role is Role.symptom]
    if not symptoms:
        return None
    specific = [m for m in symptoms if not m.signature.fallback]
    symptoms = specific or symptoms
    named = _named(symptoms)
    if named is not None:
        return named
    timeouts = [m for m in symptoms if m.signature.traits.relay is Relay.waiting]
    if timeouts:
        return _from_timeouts(timeouts, matches)
    local = [m for m in symptoms if m.signature.traits.relay is None]
    if local:
        return _first_symptom_class(local, happened_where_reported=True)
    peers = [m for m in symptoms if m.signature.traits.relay is Relay.peer]
    if peers:
        reporters = {m.event.rank for m in peers if m.event.rank is not None}
        finding = odd_one_out(peers) or narrow(
            absent_from_symptoms(reporters, matches, Relay.peer), peers, matches
        )
        return _with_finding(
            Culprit(_first_class(peers), (), tuple(sorted(reporters)), None, tuple(peers)),
            finding,
        )
    return _first_symptom_class(symptoms)


def _with_finding(culprit: Culprit, finding: Finding) -> Culprit:
    suspects = (finding.rank,) if finding.rank is not None else finding.candidates
    waiting = tuple(r for r in culprit.waiting if r not in suspects)
    return replace(culprit, suspects=tuple(suspects), waiting=waiting, finding=finding)


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
    stated = f"{first.signature_id} names rank(s) {', '.join(str(r) for r in sorted(suspects))}"
    return Culprit(
        failure_class=first.signature.failure_class or "unknown",
        suspects=tuple(sorted(suspects)),
        waiting=tuple(sorted(waiting)),
        seq=first.captures.get("seq") or first.captures.get("collective_number"),
        evidence=tuple(naming),
        finding=Finding(
            next(iter(suspects)) if len(suspects) == 1 else None,
            "stated",
            RankBasis.line,
            stated,
            candidates=tuple(sorted(suspects)) if len(suspects) > 1 else (),
            reason=stated if len(suspects) > 1 else "",
        ),
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
    # A generic fallback (a traceback whose exception is not in the input) says a rank failed,
    # not that it failed first or of itself: it may be a peer's cascade, so it names no rank.
    unfinished = first.signature.fallback
    # An error of unclear class raised inside a collective: every rank in it fails alike.
    call = call_site(first) if first.signature.tentative else None
    in_collective = call is not None
    located = (
        happened_where_reported and len(reporters) == 1 and not unfinished and not in_collective
    )
    if located:
        reporter = next(m for m in same if m.event.rank == reporters[0])
        finding = Finding(
            reporters[0],
            "stated",
            basis_of(reporter),
            f"rank {reporters[0]} alone reported {first.signature_id} of itself",
        )
    else:
        finding = Finding(
            None,
            "undetermined",
            candidates=tuple(reporters) if happened_where_reported else (),
            reason=_unlocated_reason(reporters, happened_where_reported, unfinished, call or ""),
        )
    return Culprit(
        failure_class=first.signature.failure_class or "unknown",
        suspects=tuple(reporters) if located else (),
        waiting=tuple(reporters),
        seq=None,
        evidence=tuple(same),
        finding=finding,
    )


def _unlocated_reason(
    reporters: list[int], happened_where_reported: bool, unfinished: bool, call: str
) -> str:
    if not (happened_where_reported and reporters):
        return "a relayed error names no rank"
    listed = ", ".join(str(r) for r in reporters)
    if call and not unfinished:
        return (
            f"rank(s) {listed} raised an error no signature classifies inside {call}: a "
            "collective fails on every rank that joined it, so it may have begun on a peer"
        )
    if unfinished:
        return (
            f"rank(s) {listed} printed a traceback whose exception is not in the input: it may "
            "be a peer's failure passed on"
        )
    return f"ranks {listed} reported it"


def _from_timeouts(timeouts: list[Match], matches: Sequence[Match]) -> Culprit:
    """Ranks that timed out at a lower sequence number never reached the others' collective;
    otherwise the rank whose collective differs, or the rank absent from the reports."""
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
        counted = Counter(lowest_seq.values()).most_common(2)
        common_seq = counted[0][0]
        # Behind a number most ranks agree on; a tie has no such number (which half is behind
        # would depend on which printed first).
        if len(counted) == 1 or counted[0][1] > counted[1][1]:
            behind = {rank for rank, seq in lowest_seq.items() if seq < common_seq}
    culprit = Culprit(
        failure_class=_first_class(timeouts),
        suspects=(),
        waiting=tuple(sorted(waiting - behind)),
        seq=None if common_seq is None else str(common_seq),
        evidence=tuple(timeouts),
    )
    if behind:
        listed = ", ".join(str(r) for r in sorted(behind))
        finding = Finding(
            min(behind) if len(behind) == 1 else None,
            "seq_behind",
            RankBasis.inferred,
            f"rank(s) {listed} timed out at a lower collective sequence number than the "
            f"others' {common_seq}: they never reached it",
            "a rank behind in the sequence was late, not necessarily faulty",
            candidates=tuple(sorted(behind)) if len(behind) > 1 else (),
            reason=f"ranks {listed} are all behind at SeqNum {common_seq}",
        )
        return _with_finding(culprit, finding)
    odd = odd_one_out(timeouts)
    if odd is not None:
        # Ranks waiting in different collectives: the stall is a mismatch of calls.
        return _with_finding(replace(culprit, failure_class=divergent_calls_class()), odd)
    split = split_calls(timeouts) or crossed_sequences(timeouts)
    if split is not None:
        return _with_finding(replace(culprit, failure_class=divergent_calls_class()), split)
    finding = narrow(absent_from_symptoms(waiting, matches, Relay.waiting), timeouts, matches)
    return _with_finding(culprit, finding)


def _first_class(symptoms: Sequence[Match]) -> str:
    return symptoms[0].signature.failure_class or "unknown"
