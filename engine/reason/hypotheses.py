"""Hypotheses: each root cause in evidence, with the symptoms it explains, ranked.

Consumes the ordered timeline; produces ranked `Hypothesis` objects. Root causes compete and
symptoms attach to the winner instead of becoming roots of their own. The ranking follows what
a careful investigator does:

1. Scheduler actions (preemption, time limit, node failure, cancellation, eviction) outrank every
   root cause that appears after them, give or take `SCHEDULER_LEAD_S`: they cause the pile.
2. Otherwise the earliest root cause wins; root causes within `TIE_WINDOW_S` of each other
   compete on confidence, so a specific record beats a generic exception printed alongside it.
3. A root cause that appears only well after the symptoms cannot have caused them (a hung rank
   is SIGKILLed by its launcher half a minute after its peers time out); the culprit the
   symptoms point at then ranks first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from denpex.events import Attribution, Match
from denpex.match.signature import Role, Signature
from denpex.reason.culprit import Culprit, infer_culprit
from denpex.taxonomy import Category, failure_class

SCHEDULER_LEAD_S = 60.0
TIE_WINDOW_S = 2.0
CASCADE_LEAD_S = 10.0
EVIDENCE_LINES = 6
DOMINANT_CLASSES = frozenset(
    {"preemption", "time_limit", "node_failure", "job_cancelled", "pod_evicted"}
)


@dataclass
class Hypothesis:
    failure_class: str
    signature: Signature | None
    roots: list[Match]
    confidence: float
    originating: Attribution | None
    first_seen: float | None
    explained: list[Match] = field(default_factory=list)
    culprit: Culprit | None = None

    @property
    def category(self) -> Category:
        return failure_class(self.failure_class).category

    @property
    def dominant(self) -> bool:
        return self.failure_class in DOMINANT_CLASSES


def _by_class(roots: Sequence[Match]) -> list[list[Match]]:
    groups: dict[str, list[Match]] = {}
    for match in roots:
        groups.setdefault(match.signature.failure_class, []).append(match)
    return list(groups.values())


def _hypothesis(group: list[Match]) -> Hypothesis:
    first = group[0]
    strongest = max(group, key=lambda m: m.signature.confidence)
    return Hypothesis(
        failure_class=first.signature.failure_class,
        signature=first.signature,
        roots=group,
        confidence=strongest.signature.confidence,
        originating=first.event.who,
        first_seen=first.event.time,
    )


def _rank(hypotheses: list[Hypothesis]) -> list[Hypothesis]:
    timed = sorted(
        (h for h in hypotheses if h.first_seen is not None), key=lambda h: h.first_seen or 0.0
    )
    untimed = sorted((h for h in hypotheses if h.first_seen is None), key=lambda h: -h.confidence)
    ranked: list[Hypothesis] = []
    remaining = timed
    while remaining:
        leader = remaining[0]
        assert leader.first_seen is not None
        ties = [h for h in remaining if (h.first_seen or 0.0) - leader.first_seen <= TIE_WINDOW_S]
        ties.sort(key=lambda h: -h.confidence)
        ranked.extend(ties)
        remaining = [h for h in remaining if h not in ties]
    ranked.extend(untimed)
    return _promote_scheduler(ranked)


def _promote_scheduler(ranked: list[Hypothesis]) -> list[Hypothesis]:
    """Move the earliest scheduler action above every root cause it can have caused."""
    dominant = next((h for h in ranked if h.dominant), None)
    if dominant is None or ranked[0] is dominant:
        return ranked
    if dominant.first_seen is None:
        return [dominant, *(h for h in ranked if h is not dominant)]
    ahead = [
        h
        for h in ranked
        if h is not dominant
        and h.first_seen is not None
        and h.first_seen < dominant.first_seen - SCHEDULER_LEAD_S
    ]
    rest = [h for h in ranked if h is not dominant and h not in ahead]
    return [*ahead, dominant, *rest]


def form_hypotheses(matches: Sequence[Match]) -> list[Hypothesis]:
    """Ranked hypotheses over time-ordered matches; [] when nothing abnormal was found."""
    roots = [m for m in matches if m.role is Role.root_cause]
    symptoms = [m for m in matches if m.role is Role.symptom]
    hypotheses = _rank([_hypothesis(group) for group in _by_class(roots)])
    culprit = infer_culprit(matches)
    if culprit is not None and _symptoms_come_first(symptoms, hypotheses):
        hypotheses.insert(0, _from_culprit(culprit, matches))
    if not hypotheses:
        return []
    hypotheses[0].explained = [m for m in symptoms if _explainable(m, hypotheses[0])]
    return hypotheses


def _from_culprit(culprit: Culprit, matches: Sequence[Match]) -> Hypothesis:
    """A hypothesis built from symptoms alone: lower confidence, rank only when determined."""
    originating = None
    if len(culprit.suspects) == 1:
        rank = culprit.suspects[0]
        host = next((m.event.host for m in matches if m.event.rank == rank and m.event.host), None)
        originating = Attribution(rank=rank, host=host)
    confidence = 0.7 if originating else 0.5 if culprit.suspects else 0.35
    times = [m.event.time for m in culprit.evidence if m.event.time is not None]
    return Hypothesis(
        failure_class=culprit.failure_class,
        signature=culprit.evidence[0].signature,
        roots=[],
        confidence=confidence,
        originating=originating,
        first_seen=min(times, default=None),
        culprit=culprit,
    )


def _symptoms_come_first(symptoms: list[Match], hypotheses: list[Hypothesis]) -> bool:
    """True when there is no root cause, or the first one comes well after the symptoms."""
    if not hypotheses:
        return bool(symptoms)
    top = hypotheses[0]
    if top.dominant or top.first_seen is None:
        return False
    first_symptom = min((m.event.time for m in symptoms if m.event.time is not None), default=None)
    return first_symptom is not None and first_symptom < top.first_seen - CASCADE_LEAD_S


def _explainable(symptom: Match, hypothesis: Hypothesis) -> bool:
    if symptom.event.time is None or hypothesis.first_seen is None:
        return True
    lead = SCHEDULER_LEAD_S if hypothesis.dominant else CASCADE_LEAD_S
    return symptom.event.time >= hypothesis.first_seen - lead
