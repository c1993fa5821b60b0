"""Finds the stored incidents most like a new failure, and what their known causes say.

Consumes the incident store, an embedder and a vector index of the store's line templates, and a
query (the masked first-abnormal lines of the new failure); produces ranked `Neighbour`s with
their labels, and a class vote over them.

Similarity is line-level: each query line is compared with every stored template (the mean of
embedding cosine and word overlap, see `line_similarity`), and an incident scores a weighted
mean, over the query lines, of its best match to each. A line's
weight is its inverse document frequency among the labelled incidents (how many hold a line
at least `NEAR_DUPLICATE` similar to it): the launcher's failure summary, printed by every
failure, weighs almost nothing, and the line only this kind of failure prints decides.
Only incidents with a known cause (a curator's confirmation, or a confident rules answer) are
neighbours. The index is brought up to date with the store before each search.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from denpex.retrieval.embedder import Embedder
from denpex.retrieval.index import VectorIndex
from denpex.store.records import Label
from denpex.store.store import IncidentStore

if TYPE_CHECKING:
    import numpy as np

TEMPLATES_PER_QUERY_LINE = 64
NEAR_DUPLICATE = 0.9
"""Cosine similarity above which two masked lines are taken to be the same line reworded."""


@dataclass(frozen=True)
class LinePair:
    query: str
    stored: str
    similarity: float
    weight: float
    """How much the query line counts (its inverse document frequency)."""


@dataclass(frozen=True)
class Neighbour:
    incident_id: str
    similarity: float
    """Weighted mean over the query lines of the best cosine similarity to this incident's
    lines, in [0, 1] for unit vectors; lines common to many incidents weigh little."""
    label: Label
    pairs: tuple[LinePair, ...] = field(default=())
    """The best-matching line for each query line, the most telling first."""


@dataclass(frozen=True)
class ClassVote:
    failure_class: str
    share: float
    """This class's share of the distance-weighted vote of the neighbours, in [0, 1]."""
    neighbours: tuple[Neighbour, ...]


class SimilarIncidents:
    def __init__(
        self,
        store: IncidentStore,
        embedder: Embedder,
        index: VectorIndex,
        known: Mapping[str, np.ndarray] | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.index = index
        self.known = known or {}
        """Vectors computed ahead of time by this embedder (the seed history's), by template."""

    def sync(self) -> int:
        """Embeds the store's templates the index lacks, drops ones it no longer has; saves."""
        stored = self.store.template_ids()
        indexed = self.index.ids()
        stale = indexed - stored
        self.index.remove(stale)
        missing = self.store.templates(exclude=indexed)
        if missing:
            import numpy as np

            ids = [template_id for template_id, _ in missing]
            vectors = np.zeros((len(missing), self.embedder.dim), dtype=np.float32)
            fresh = [i for i, (_, text) in enumerate(missing) if text not in self.known]
            for i, (_, text) in enumerate(missing):
                if text in self.known:
                    vectors[i] = self.known[text]
            if fresh:
                vectors[fresh] = self.embedder.encode([missing[i][1] for i in fresh])
            self.index.add(ids, vectors)
        if missing or stale:
            self.index.save()
        return len(missing)

    def _vectors(self, query: Sequence[str], texts: dict[int, str]) -> np.ndarray:
        """Query vectors: lines already indexed are read back, only new ones are embedded."""
        import numpy as np

        indexed = self.index.ids()
        known = {text: template_id for template_id, text in texts.items() if template_id in indexed}
        reuse = [i for i, text in enumerate(query) if text in known]
        fresh = [i for i, text in enumerate(query) if text not in known]
        vectors = np.zeros((len(query), self.embedder.dim), dtype=np.float32)
        if reuse:
            vectors[reuse] = self.index.vectors([known[query[i]] for i in reuse])
        if fresh:
            vectors[fresh] = self.embedder.encode([query[i] for i in fresh])
        return vectors

    def search(
        self, query: Sequence[str], k: int = 5, *, exclude: frozenset[str] = frozenset()
    ) -> list[Neighbour]:
        """The k labelled incidents most similar to the query lines, best first."""
        if not query:
            return []
        self.sync()
        postings, labels = self.store.labelled_postings()
        texts = dict(self.store.templates())
        hits = self.index.search(self._vectors(query, texts), TEMPLATES_PER_QUERY_LINE)
        best: dict[str, dict[int, tuple[float, int]]] = {}
        for line_number, row in enumerate(hits):
            for template_id, cosine in row:
                score = line_similarity(cosine, query[line_number], texts.get(template_id, ""))
                for incident_id in postings.get(template_id, ()):
                    if incident_id in exclude:
                        continue
                    per_line = best.setdefault(incident_id, {})
                    if score > per_line.get(line_number, (-1.0, 0))[0]:
                        per_line[line_number] = (score, template_id)
        weights = _idf(best, len(query), len(set(labels) - exclude))
        total = sum(weights) or 1.0

        def score(per_line: dict[int, tuple[float, int]]) -> float:
            return sum(weights[line] * s for line, (s, _) in per_line.items()) / total

        def telling(per_line: dict[int, tuple[float, int]]) -> float:
            return max(weights[line] * s for line, (s, _) in per_line.items())

        # Equal scores: the incident with the single most telling match, then the older one.
        age = {incident_id: position for position, incident_id in enumerate(labels)}
        ranked = sorted(
            best.items(),
            key=lambda item: (-score(item[1]), -telling(item[1]), age[item[0]]),
        )[:k]
        return [
            Neighbour(
                incident_id=incident_id,
                similarity=round(score(per_line), 4),
                label=labels[incident_id],
                pairs=tuple(
                    sorted(
                        (
                            LinePair(
                                query[line],
                                texts.get(template_id, ""),
                                round(s, 4),
                                round(weights[line], 4),
                            )
                            for line, (s, template_id) in per_line.items()
                        ),
                        key=lambda pair: -pair.similarity * pair.weight,
                    )
                ),
            )
            for incident_id, per_line in ranked
        ]


_WORD = re.compile(r"<[A-Z]+>|[A-Za-z][A-Za-z0-9_]*")


def _words(template: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(template) if not w.startswith("<")}


def line_similarity(cosine: float, query: str, stored: str) -> float:
    """The mean of the embeddings' cosine and the word overlap (Jaccard) of two templates.

    Sentence embeddings rate lines that differ in one decisive word (SIGSEGV for SIGTERM, a
    different exception type) as near-identical; the word overlap keeps those apart, while the
    cosine still relates differently worded reports of one event."""
    a, b = _words(query), _words(stored)
    overlap = len(a & b) / len(a | b) if a | b else 1.0
    return (max(cosine, 0.0) + overlap) / 2


def _idf(best: dict[str, dict[int, tuple[float, int]]], lines: int, incidents: int) -> list[float]:
    """Per query line, ln((N + 1) / (n + 0.5)) where n incidents hold a near duplicate of it."""
    holding = [0] * lines
    for per_line in best.values():
        for line, (similarity, _) in per_line.items():
            if similarity >= NEAR_DUPLICATE:
                holding[line] += 1
    return [math.log((incidents + 1) / (n + 0.5)) for n in holding]


VOTE_SMOOTHING = 0.05
"""Added to the distance 1 - similarity before inverting it, so an exact match counts a lot
but finitely."""


def _weight(neighbour: Neighbour) -> float:
    return 1.0 / (1.0 - min(max(neighbour.similarity, 0.0), 1.0) + VOTE_SMOOTHING)


def vote(neighbours: Sequence[Neighbour]) -> list[ClassVote]:
    """Classes of the neighbours, strongest first, each with its share of the vote.

    Votes are weighted by inverse distance (Dudani's distance-weighted k-NN): a near-exact
    match outweighs several loose ones, so adding farther neighbours rarely overturns the
    nearest."""
    if not neighbours:
        return []
    total = sum(_weight(n) for n in neighbours)
    by_class: dict[str, list[Neighbour]] = {}
    for neighbour in neighbours:
        by_class.setdefault(neighbour.label.failure_class, []).append(neighbour)
    votes = [
        ClassVote(
            failure_class=failure_class,
            share=round(sum(_weight(n) for n in members) / total, 4),
            neighbours=tuple(members),
        )
        for failure_class, members in by_class.items()
    ]
    # Ties go to the class of the nearest neighbour, so k=1 and k=n agree when they can.
    order = {n.incident_id: i for i, n in enumerate(neighbours)}
    return sorted(votes, key=lambda v: (-v.share, order[v.neighbours[0].incident_id]))
