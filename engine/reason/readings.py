"""Readings the evidence leaves open: what most often lies behind the answer's class when the
input holds no record of why it happened (taxonomy.yaml `often_behind`).

Consumes the ranked hypotheses once their confidences are set; returns them with one
hypothesis per such reading that none of them states already, placed among the alternatives by
the confidence it is given. A reading never takes the answer's place and never changes its
confidence: the readings take `READING_SHARE` of what the answer leaves (never more each than
the answer's own) and the alternatives keep the rest, so the list still never claims more than
certainty in total.
"""

from __future__ import annotations

from denpex.reason.hypothesis import Hypothesis
from denpex.taxonomy import often_behind

READING_SHARE = 0.5
"""Of what the answer leaves, the part its open readings take together."""


def with_open_readings(hypotheses: list[Hypothesis]) -> list[Hypothesis]:
    if not hypotheses:
        return hypotheses
    top = hypotheses[0]
    stated = {h.failure_class for h in hypotheses}
    # What the answer rests on: its own lines, or the symptoms a symptom-only answer reads.
    culprit = list(top.culprit.evidence) if top.culprit is not None else []
    said = [m.event.text for m in [*top.roots, *top.corroboration, *culprit, *top.explained]]
    readings = [
        r
        for r in often_behind(top.failure_class)
        if r.failure_class not in stated
        and (r.when is None or any(r.when.search(text) for text in said))
    ]
    if not readings:
        return hypotheses
    alternatives = hypotheses[1:]
    for hypothesis in alternatives:
        hypothesis.confidence = round(hypothesis.confidence * (1.0 - READING_SHARE), 3)
    # Never above the answer it follows: a reading has no line of its own to outweigh it.
    each = round(min((1.0 - top.confidence) * READING_SHARE / len(readings), top.confidence), 3)
    for reading in readings:
        opened = Hypothesis(
            failure_class=reading.failure_class,
            signature=None,
            roots=[],
            prior=each,
            originating=top.originating,
            first_seen=top.first_seen,
            confidence=each,
            reading=reading,
            behind=top.failure_class,
        )
        place = next(
            (i for i, h in enumerate(alternatives) if h.confidence < each), len(alternatives)
        )
        alternatives.insert(place, opened)
    return [top, *alternatives]
