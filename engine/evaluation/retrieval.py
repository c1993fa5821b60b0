"""Leave-one-out retrieval quality over a labelled corpus.

Consumes a case directory (see `corpus.py`), the signature library and an embedder; produces a
`RetrievalReport`. Every labelled case is diagnosed and stored as an incident whose cause is its
label, in a scratch store; then each case's query (the masked first abnormal lines, as the
hybrid path builds it) searches all the other incidents, less those taken from the case's own
source (no self-retrieval: two cases cut from one issue thread are one incident). Definitions:

- accuracy@1: the nearest other incident has the case's class. When several incidents tie
  for nearest, the case earns the fraction of them that have its class (no credit for luck).
- accuracy@5: the similarity-weighted vote of the 5 nearest names the case's class (the class
  a retrieval-only best effort would name).
- hit@5: the case's class is among the 5 nearest incidents at all.

Clean cases (no expected failure) are not queries and not neighbours; they are counted apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from denpex.evidence import Evidence
from denpex.hybrid.path import HybridCase, HybridPath
from denpex.hybrid.settings import HybridSettings
from denpex.match.scan import AbnormalLines, Matcher
from denpex.models import Diagnosis
from denpex.pipeline import DiagnoseOptions, diagnose
from denpex.retrieval.corpus import LabelledCase, load_corpora, same_source
from denpex.retrieval.embedder import Embedder
from denpex.retrieval.similar import Neighbour, vote
from denpex.signatures.library import Library
from denpex.store.store import open_store, store_url

CORPUS_CURATOR = "corpus label"
THRESHOLDS_SHOWN = (0.0, 0.4, 0.5, 0.6, 0.7, 0.8)


@dataclass(frozen=True)
class IndexedCase:
    case: LabelledCase
    incident_id: str
    diagnosis: Diagnosis


class _Capture:
    """Passes cases through to a hybrid path and remembers the last one (for its id)."""

    def __init__(self, path: HybridPath) -> None:
        self.path = path
        self.last: HybridCase | None = None

    def abnormal_lines(self, backend: str, cache_dir: Path | None) -> AbnormalLines:
        return self.path.abnormal_lines(backend, cache_dir)

    def case(self, evidence: Evidence) -> HybridCase:
        self.last = self.path.case(evidence)
        return self.last


def scratch_path(workdir: Path, embedder: Embedder, *, answer: bool = False) -> HybridPath:
    """A hybrid path over a new SQLite store and index in `workdir`, recording only."""
    database = workdir / "incidents.db"
    settings = HybridSettings(
        store_url=store_url(str(database)), index_path=workdir / "incidents.db.faiss"
    )
    return HybridPath(
        settings, store=open_store(settings.store_url), embedder=embedder, answer=answer
    )


def index_corpus(
    cases: Sequence[LabelledCase],
    path: HybridPath,
    matcher: Matcher,
    threshold: float,
) -> list[IndexedCase]:
    """Diagnoses and stores every labelled case, confirmed with its label. Healthy cases and
    cases labelled `unknown` (a cause the taxonomy has no class for, such as a cloud quota)
    have no class a curator could confirm, so they hold nothing to retrieve."""
    capture = _Capture(path)
    indexed = []
    for case in cases:
        if case.failure_class in (None, "unknown"):
            continue
        diagnosis = diagnose(
            list(case.inputs),
            DiagnoseOptions(confidence_threshold=threshold),
            matcher=matcher,
            hybrid=capture,
        )
        assert capture.last is not None
        incident_id = capture.last.incident_id
        path.store.confirm(incident_id, case.failure_class, by=CORPUS_CURATOR, note=case.name)
        indexed.append(IndexedCase(case, incident_id, diagnosis))
    return indexed


@dataclass(frozen=True)
class CaseRetrieval:
    case: str
    expected: str
    at_1: str | None
    at_1_credit: float
    """1 when the nearest is of the right class; the right fraction of a tie for nearest."""
    at_5: str | None
    hit_5: bool
    share_5: float
    """The vote share of the class named at 5 (what the best effort reports as confidence)."""
    nearest_similarity: float
    nearest: tuple[tuple[str, str, float], ...]
    """(case, class, similarity) of the 5 nearest."""


@dataclass
class RetrievalReport:
    results: list[CaseRetrieval] = field(default_factory=list)
    clean_cases: list[str] = field(default_factory=list)

    def _rate(self, hits: float) -> float:
        return hits / len(self.results) if self.results else 0.0

    @property
    def accuracy_at_1(self) -> float:
        return self._rate(sum(r.at_1_credit for r in self.results))

    @property
    def accuracy_at_5(self) -> float:
        return self._rate(sum(r.at_5 == r.expected for r in self.results))

    @property
    def hit_at_5(self) -> float:
        return self._rate(sum(r.hit_5 for r in self.results))

    def answered_at(self, min_similarity: float) -> tuple[float, float]:
        """With neighbours below `min_similarity` ignored (as the best effort does): the share
        of cases that still get a retrieval answer, and how often its class (@5) is right."""
        answered = [r for r in self.results if r.nearest_similarity >= min_similarity]
        if not answered:
            return 0.0, 0.0
        right = sum(r.at_5 == r.expected for r in answered)
        return len(answered) / len(self.results), right / len(answered)

    def as_dict(self) -> dict[str, object]:
        return {
            "cases": len(self.results),
            "clean_cases_skipped": len(self.clean_cases),
            "accuracy_at_1": round(self.accuracy_at_1, 4),
            "accuracy_at_5": round(self.accuracy_at_5, 4),
            "hit_at_5": round(self.hit_at_5, 4),
            "answered_at_min_similarity": {
                f"{threshold:.1f}": dict(
                    zip(("coverage", "accuracy_at_5"), self.answered_at(threshold), strict=True)
                )
                for threshold in THRESHOLDS_SHOWN
            },
            "results": [r.__dict__ for r in self.results],
        }


def _credit_at_1(found: Sequence[Neighbour], expected: str) -> float:
    if not found:
        return 0.0
    tied = [n for n in found if n.similarity == found[0].similarity]
    return sum(n.label.failure_class == expected for n in tied) / len(tied)


def evaluate_retrieval(
    corpora: Sequence[Path],
    *,
    workdir: Path,
    library: Library,
    embedder: Embedder,
    threshold: float = 0.6,
    k: int = 5,
    cache_dir: Path | None = None,
) -> RetrievalReport:
    cases = load_corpora(corpora)
    path = scratch_path(workdir, embedder)
    try:
        indexed = index_corpus(cases, path, Matcher(library, cache_dir=cache_dir), threshold)
        names = {item.incident_id: item.case.name for item in indexed}
        by_case = {item.case.name: item.incident_id for item in indexed}
        report = RetrievalReport(clean_cases=[c.name for c in cases if c.failure_class is None])
        for item in indexed:
            query = path.store.get(item.incident_id).templates
            own = same_source(item.case, [i.case for i in indexed])
            found = path.similar.search(query, k, exclude=frozenset(by_case[c.name] for c in own))
            at_1, at_5 = vote(found[:1]), vote(found[:k])
            expected = item.case.failure_class
            assert expected is not None
            report.results.append(
                CaseRetrieval(
                    case=item.case.name,
                    expected=expected,
                    at_1=at_1[0].failure_class if at_1 else None,
                    at_1_credit=_credit_at_1(found, expected),
                    at_5=at_5[0].failure_class if at_5 else None,
                    hit_5=any(n.label.failure_class == expected for n in found),
                    share_5=at_5[0].share if at_5 else 0.0,
                    nearest_similarity=found[0].similarity if found else 0.0,
                    nearest=tuple(
                        (names[n.incident_id], n.label.failure_class, n.similarity) for n in found
                    ),
                )
            )
        return report
    finally:
        path.store.close()
