"""The best-effort answer from similar past incidents alone.

Consumes the class vote over the nearest labelled incidents, the excerpt of this failure and
the rules' own (unconfident) candidates; produces `RootCause`s with source `retrieval` and
`best_effort` true. Evidence is the lines of this input that resemble the neighbours' lines
most; the originating rank and host are only filled in when a rules candidate of the same class
determined them, never guessed from the neighbours.
"""

from __future__ import annotations

from collections.abc import Sequence

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
