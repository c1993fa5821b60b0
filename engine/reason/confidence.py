"""Confidence: the probability that a ranked hypothesis names the right failure class.

Consumes ranked hypotheses and the symptoms the top one could not explain; sets each
hypothesis's `confidence`. The top answer starts from its signature's prior and moves with the
evidence around it: independent corroboration (consequences it explains, a cascade on other
ranks) raises it; a rival root cause close in time, or symptoms that began before it, lower it.
Alternatives share what the top answer leaves, in proportion to their priors, so the ranked
list never claims more than certainty in total, and none is more confident than the top. The
factors are checked against the eval corpus's reliability table (`denpex eval`), not tuned to
single cases.
"""

from __future__ import annotations

from collections.abc import Sequence

from denpex.events import Match
from denpex.reason.culprit import Culprit
from denpex.reason.hypothesis import Hypothesis
from denpex.taxonomy import traits

CONSEQUENCE_WEIGHT = 0.2
CASCADE_WEIGHT = 0.15
CLOSE_RIVAL_S = 30.0
CLOSE_RIVAL_PENALTY = 0.4
FAR_RIVAL_PENALTY = 0.15
EARLY_SYMPTOM_PENALTY = 0.8
THIN_RANK_EVIDENCE = 0.85
"""The rank was inferred from thin evidence (the job's size unknown, one process's line)."""
CEILING = 0.99


def culprit_confidence(culprit: Culprit) -> float:
    """Symptoms alone. The class (a collective stalled, a peer died) is what the symptoms state,
    so it is rarely wrong when no deeper cause is in evidence; what the evidence may not settle
    is who, and the confidence moves with the number of suspects (taxonomy.yaml's
    `symptom_confidence` of the class: a peer's closed connection is the class only when the
    dead peer left no record of its own, so it stays modest)."""
    levels = traits(culprit.failure_class).symptom_confidence
    if len(culprit.suspects) == 1 and culprit.finding is not None and culprit.finding.rank is None:
        # A lone candidate the evidence did not settle on is one possibility among others (a
        # rank that left no line at all), not one suspect.
        return levels.several_suspects
    return levels.for_suspects(len(culprit.suspects))


def _raise(confidence: float, weight: float) -> float:
    return confidence + (1.0 - confidence) * weight


def _corroborated(hypothesis: Hypothesis, base: float) -> float:
    confidence = base
    for _ in {m.signature.failure_class for m in hypothesis.consequences}:
        confidence = _raise(confidence, CONSEQUENCE_WEIGHT)
    origin = hypothesis.originating.rank if hypothesis.originating else None
    others = {m.event.rank for m in hypothesis.explained} - {None, origin}
    # A culprit is inferred from the symptoms it explains: one rank's report is the inference's
    # own evidence, not a second witness; several ranks reporting alike corroborate it.
    witnesses_needed = 2 if hypothesis.culprit is not None else 1
    if len(others) >= witnesses_needed:
        confidence = _raise(confidence, CASCADE_WEIGHT)
    return confidence


def _rivalled(top: Hypothesis, rival: Hypothesis | None, confidence: float) -> float:
    if rival is None:
        return confidence
    close = (
        top.first_seen is None
        or rival.first_seen is None
        or abs(rival.first_seen - top.first_seen) <= CLOSE_RIVAL_S
    )
    penalty = CLOSE_RIVAL_PENALTY if close else FAR_RIVAL_PENALTY
    return confidence * (1.0 - penalty * rival.prior)


def assign_confidence(hypotheses: Sequence[Hypothesis], unexplained: Sequence[Match]) -> None:
    top = hypotheses[0]
    base = culprit_confidence(top.culprit) if top.culprit is not None else top.prior
    confidence = _corroborated(top, base)
    confidence = _rivalled(top, hypotheses[1] if len(hypotheses) > 1 else None, confidence)
    if unexplained:
        confidence *= EARLY_SYMPTOM_PENALTY
    # Thin evidence weakens a named rank and the suspects a culprit's class rests on alike.
    suspected = top.originating is not None or top.culprit is not None
    if top.finding is not None and top.finding.thin and suspected:
        confidence *= THIN_RANK_EVIDENCE
    top.confidence = round(min(confidence, CEILING), 3)
    alternatives = hypotheses[1:]
    total_prior = sum(h.prior for h in alternatives)
    for hypothesis in alternatives:
        share = hypothesis.prior / total_prior if total_prior else 0.0
        # Never above the top answer: the ranking says the top is the likeliest, and what a
        # weak top leaves is as much "none of these" as it is the alternatives'.
        hypothesis.confidence = round(min((1.0 - top.confidence) * share, top.confidence), 3)
