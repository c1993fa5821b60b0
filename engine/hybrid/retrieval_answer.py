"""The best-effort answer as root causes: one per fused candidate class.

Consumes the fused candidates (`fuse.py`), the class vote over the nearest labelled incidents,
the excerpt of this failure, the rules' own (unconfident) candidates and the LLM's checked
draft; produces `RootCause`s with `best_effort` true and the fused confidence. A class the LLM
drafted keeps its checked cause; one the rules named keeps theirs (evidence, origin, next
steps) unless retrieval weighs more for it; one only retrieval named is
told as a vote, with the lines of this input that resemble the neighbours' most; one only cues
named cites the lines the cues are on. The origin is never taken from the neighbours: it is
the same-class candidate's, else the rules' top candidate's, else the one the abnormal lines'
attribution determines (`denpex.reason.abnormal.origin_of`).
"""

from __future__ import annotations

from collections.abc import Sequence

from denpex.events import Attribution
from denpex.hybrid.fuse import Candidate, load_cues
from denpex.models import Evidence, Explains, RootCause, Source
from denpex.retrieval.similar import ClassVote, Neighbour
from denpex.store.records import ExcerptLine, LabelSource
from denpex.taxonomy import failure_class

EVIDENCE_LINES = 6
MAX_CAUSES = 3


def evidence_of(line: ExcerptLine) -> Evidence:
    return Evidence(
        source=line.source,
        line=line.line,
        rank=line.rank,
        host=line.host,
        time=line.time,
        time_inferred=line.time_inferred,
        text=line.text,
        signature_id=line.signature_id,
    )


def _evidence(vote: ClassVote, excerpt: Sequence[ExcerptLine]) -> list[Evidence]:
    """This input's lines that tie it to the voters most: similar and rare lines first."""
    strength: dict[str, float] = {}
    for neighbour in vote.neighbours:
        for pair in neighbour.pairs:
            telling = pair.similarity * pair.weight
            strength[pair.query] = max(strength.get(pair.query, 0.0), telling)
    lines = sorted(
        (line for line in excerpt if line.template in strength),
        key=lambda line: -strength[line.template],
    )
    return [evidence_of(line) for line in lines[:EVIDENCE_LINES]]


def _who_said(neighbours: Sequence[Neighbour]) -> str:
    curated = sum(1 for n in neighbours if n.label.source is LabelSource.curator)
    ruled = len(neighbours) - curated
    parts = []
    if curated:
        parts.append(f"{curated} confirmed by a curator")
    if ruled:
        parts.append(f"{ruled} settled by the rules")
    return ", ".join(parts)


def root_cause_from_vote(
    vote: ClassVote,
    neighbours: Sequence[Neighbour],
    excerpt: Sequence[ExcerptLine],
    rules_causes: Sequence[RootCause],
) -> RootCause:
    fc = failure_class(vote.failure_class)
    nearest = vote.neighbours[0]
    same_class = next((c for c in rules_causes if c.failure_class == fc.id), None)
    title = (
        f"Resembles {len(vote.neighbours)} of the {len(neighbours)} most similar past "
        f"incidents, known to be {fc.id} ({_who_said(vote.neighbours)})"
    )
    caveat = (
        "Best effort: no signature settled this failure. The class is a similarity-weighted "
        f"vote of past incidents (nearest {nearest.incident_id[:12]}, similarity "
        f"{nearest.similarity:.2f}); check the evidence lines before acting. {fc.id} means: "
        f"{fc.meaning}."
    )
    steps = [
        f"Compare with the nearest incident: denpex curate show {n.incident_id[:12]}"
        for n in vote.neighbours[:2]
    ]
    if same_class is not None:
        steps += same_class.next_steps
    return RootCause(
        failure_class=fc.id,
        category=fc.category,
        signature_id=None,
        confidence=round(min(max(vote.share, 0.0), 1.0), 3),
        source=Source.retrieval,
        best_effort=True,
        originating_rank=same_class.originating_rank if same_class else None,
        originating_host=same_class.originating_host if same_class else None,
        originating_local_rank=same_class.originating_local_rank if same_class else None,
        first_seen=same_class.first_seen if same_class else None,
        title=title,
        caveat=caveat,
        evidence=_evidence(vote, excerpt) or (same_class.evidence if same_class else []),
        explains=same_class.explains if same_class else Explains(),
        next_steps=steps,
        owner=fc.owner,
    )


def retrieval_root_causes(
    votes: Sequence[ClassVote],
    neighbours: Sequence[Neighbour],
    excerpt: Sequence[ExcerptLine],
    rules_causes: Sequence[RootCause],
) -> list[RootCause]:
    return [
        root_cause_from_vote(vote, neighbours, excerpt, rules_causes) for vote in votes[:MAX_CAUSES]
    ]


_SOURCES = {"rules": Source.rules, "retrieval": Source.retrieval, "llm": Source.llm}


def _cue_cause(candidate: Candidate, excerpt: Sequence[ExcerptLine]) -> RootCause:
    fc = failure_class(candidate.failure_class)
    names = [s.split(":", 1)[1] for s in candidate.support if s.startswith("cue:")]
    cues = [c for c in load_cues().cues if c.name in names]
    lines = [line for line in excerpt if any(c.pattern.search(line.text) for c in cues)]
    return RootCause(
        failure_class=fc.id,
        category=fc.category,
        signature_id=None,
        confidence=candidate.confidence,
        source=Source.rules,
        best_effort=True,
        title=f"The abnormal lines speak of {', '.join(names)}, a sign of {fc.id}",
        caveat=(
            "Best effort: no signature settled this failure; words in its abnormal lines point "
            f"at this class. {fc.id} means: {fc.meaning}."
        ),
        evidence=[evidence_of(line) for line in lines[:EVIDENCE_LINES]],
        next_steps=["Read the cited lines and what precedes them."],
        owner=fc.owner,
    )


def _placed(cause: RootCause, origin: Attribution | None) -> RootCause:
    if cause.originating_rank is not None or origin is None:
        return cause
    if cause.originating_host is not None and origin.host != cause.originating_host:
        return cause
    return cause.model_copy(
        update={
            "originating_rank": origin.rank,
            # model_copy skips the validator that derives the list from the rank.
            "originating_ranks": [origin.rank] if origin.rank is not None else [],
            "originating_host": origin.host,
            "originating_local_rank": origin.local_rank,
        }
    )


def fused_root_causes(
    ranked: Sequence[Candidate],
    *,
    rules_causes: Sequence[RootCause],
    drafted: Sequence[RootCause],
    votes: Sequence[ClassVote],
    neighbours: Sequence[Neighbour],
    excerpt: Sequence[ExcerptLine],
    origin: Attribution | None,
) -> list[RootCause]:
    """One best-effort cause per candidate, in the fused order."""
    placed_by_rules = next(
        (c for c in rules_causes if c.originating_rank is not None or c.originating_host), None
    )
    if placed_by_rules is not None:
        origin = Attribution(
            rank=placed_by_rules.originating_rank,
            host=placed_by_rules.originating_host,
            local_rank=placed_by_rules.originating_local_rank,
        )
    causes = []
    for candidate in ranked:
        cls = candidate.failure_class
        ruled = next((c for c in rules_causes if c.failure_class == cls), None)
        llm = next((c for c in drafted if c.failure_class == cls), None)
        voted = next((v for v in votes if v.failure_class == cls), None)
        lead = candidate.leading_source
        if llm is not None:  # the model's cause cites its lines and says why
            cause = llm
        elif ruled is not None and (lead in ("rules", "cue") or voted is None):
            cause = ruled
            if voted is not None:  # past incidents agree: say which to compare with
                compare = root_cause_from_vote(voted, neighbours, excerpt, rules_causes)
                steps = [*compare.next_steps[: len(voted.neighbours[:2])], *ruled.next_steps]
                cause = ruled.model_copy(update={"next_steps": list(dict.fromkeys(steps))})
        elif voted is not None:
            cause = root_cause_from_vote(voted, neighbours, excerpt, rules_causes)
        else:
            cause = _cue_cause(candidate, excerpt)
        cause = cause.model_copy(
            update={
                "confidence": candidate.confidence,
                "best_effort": True,
                "source": cause.source
                if cause.source is not Source.rules
                else _SOURCES.get(lead, Source.rules),
            }
        )
        causes.append(_placed(cause, origin))
    return causes
