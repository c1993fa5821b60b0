"""Leave-one-family-out: how the hybrid path copes when a signature family is missing.

Consumes a labelled corpus (see `denpex.retrieval.corpus`), the signature library and an
embedder; produces a `FamilyOutReport`. Every labelled case is first diagnosed with the whole
library and stored as an incident confirmed with its label (the past, as curators left it).
Then, for each family, the cases it settled (confident, top root cause from that family) are
diagnosed again with the family removed and the hybrid path answering (retrieval fused with
the rules' partial answers). The question: how often is the answer best effort and of the
right class? Retrieval never sees the case's own source (its incident, and any other case cut
from the same issue thread).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from denpex.evaluation.retrieval import IndexedCase, index_corpus, scratch_path
from denpex.hybrid.path import HybridPath
from denpex.match.scan import Matcher
from denpex.models import Status
from denpex.pipeline import DiagnoseOptions, diagnose
from denpex.retrieval.corpus import load_corpora, same_source
from denpex.retrieval.embedder import Embedder
from denpex.signatures.library import Library


@dataclass(frozen=True)
class FamilyOutcome:
    family: str
    case: str
    expected: str
    rules_class: str
    """What the whole library said (confidently)."""
    status: str
    named: str | None
    source: str | None
    best_effort: bool
    right_best_effort: bool
    """Best effort, and of the expected class."""
    right_in_top3: bool = False
    """Best effort, and the expected class among its first three causes."""


@dataclass
class FamilyOutReport:
    families: list[str] = field(default_factory=list)
    outcomes: list[FamilyOutcome] = field(default_factory=list)

    def _count(self, outcomes: Sequence[FamilyOutcome]) -> dict[str, int]:
        return {
            "settled_cases": len(outcomes),
            "rules_were_right": sum(o.rules_class == o.expected for o in outcomes),
            "best_effort": sum(o.best_effort for o in outcomes),
            "best_effort_right": sum(o.right_best_effort for o in outcomes),
            "best_effort_right_top3": sum(o.right_in_top3 for o in outcomes),
            "still_confident": sum(o.status == Status.confident.value for o in outcomes),
            "still_confident_right": sum(
                o.status == Status.confident.value and o.named == o.expected for o in outcomes
            ),
            "unknown": sum(o.status == Status.unknown.value for o in outcomes),
        }

    def per_family(self) -> dict[str, dict[str, int]]:
        return {
            family: self._count([o for o in self.outcomes if o.family == family])
            for family in self.families
        }

    @property
    def best_effort_right_rate(self) -> float:
        return (
            sum(o.right_best_effort for o in self.outcomes) / len(self.outcomes)
            if self.outcomes
            else 0.0
        )

    def as_dict(self) -> dict[str, object]:
        return {
            "total": self._count(self.outcomes),
            "best_effort_right_rate": round(self.best_effort_right_rate, 4),
            "per_family": self.per_family(),
            "outcomes": [asdict(o) for o in self.outcomes],
        }

    def summary_text(self) -> str:
        total = self._count(self.outcomes)
        counts = self.per_family()
        lines = [
            f"{family}: {c['settled_cases']} settled case(s); without it {c['best_effort_right']} "
            f"best effort of the right class, {c['best_effort']} best effort in all, "
            f"{c['still_confident']} still confident ({c['still_confident_right']} right), "
            f"{c['unknown']} unknown"
            for family, c in counts.items()
            if c["settled_cases"]
        ]
        idle = sorted(family for family, c in counts.items() if not c["settled_cases"])
        if idle:
            lines.append(f"settled no case of this corpus: {', '.join(idle)}")
        lines.append(
            f"all families: {total['best_effort_right']}/{total['settled_cases']} named the right "
            f"class as best effort ({self.best_effort_right_rate:.1%}); "
            f"{total['best_effort_right_top3']} among its first three"
        )
        return "\n".join(lines)


def _settled_by(item: IndexedCase, family: str) -> bool:
    diagnosis = item.diagnosis
    if diagnosis.status is not Status.confident or not diagnosis.root_causes:
        return False
    signature = diagnosis.root_causes[0].signature_id
    return signature is not None and signature.split(".", 1)[0] == family


def evaluate_family_out(
    corpora: Sequence[Path],
    *,
    workdir: Path,
    library: Library,
    embedder: Embedder,
    families: Sequence[str] | None = None,
    threshold: float = 0.6,
    cache_dir: Path | None = None,
) -> FamilyOutReport:
    """`cache_dir`: where the compiled scanner databases (the library less each family) are
    kept between runs."""
    cases = load_corpora(corpora)
    recorder = scratch_path(workdir, embedder)
    try:
        whole = Matcher(library, cache_dir=cache_dir)
        indexed = index_corpus(cases, recorder, whole, threshold)
        answering = HybridPath(
            recorder.settings,
            store=recorder.store,
            embedder=embedder,
            answer=True,
            record=False,
        )
        chosen = sorted(families or {i.split(".", 1)[0] for i in library.ids()})
        cases_indexed = [i.case for i in indexed]
        by_case = {i.case.name: i.incident_id for i in indexed}
        report = FamilyOutReport(families=chosen)
        options = DiagnoseOptions(confidence_threshold=threshold)
        for family in chosen:
            settled = [item for item in indexed if _settled_by(item, family)]
            if not settled:
                continue
            matcher = whole.without_families([family])
            for item in settled:
                assert item.case.failure_class is not None
                diagnosis = diagnose(
                    list(item.case.inputs),
                    options,
                    matcher=matcher,
                    hybrid=answering.excluding(
                        [by_case[c.name] for c in same_source(item.case, cases_indexed)]
                    ),
                )
                top = diagnosis.root_causes[0] if diagnosis.root_causes else None
                best_effort = diagnosis.status is Status.best_effort
                report.outcomes.append(
                    FamilyOutcome(
                        family=family,
                        case=item.case.name,
                        expected=item.case.failure_class,
                        rules_class=item.diagnosis.root_causes[0].failure_class,
                        status=diagnosis.status.value,
                        named=top.failure_class if top else None,
                        source=top.source.value if top else None,
                        best_effort=best_effort,
                        right_best_effort=best_effort
                        and top is not None
                        and top.best_effort
                        and top.failure_class == item.case.failure_class,
                        right_in_top3=best_effort
                        and item.case.failure_class
                        in [c.failure_class for c in diagnosis.root_causes[:3]],
                    )
                )
        return report
    finally:
        recorder.store.close()
