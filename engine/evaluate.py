"""The scorer behind `denpex eval`: diagnoses every labelled case and measures the answers.

Consumes a corpus directory (`<case>/expected.json` beside the case's inputs) and diagnosis
options; produces an `EvalReport`: class accuracy (top-1, top-3), category accuracy,
originating-rank accuracy, the rate of confident-but-wrong answers, a reliability table of
confidence against accuracy, latency per case, the same figures on the cases whose loudest
error is misleading, and per-signature precision and recall. Thresholds checked in CI come from
a JSON file of minimums (and maximums for rates that must stay low).
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Iterable
from itertools import pairwise
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from denpex.errors import DenpexError, InputError
from denpex.hybrid.harvest import unexplained_lines
from denpex.match.library import Library
from denpex.match.scan import Matcher
from denpex.models import Diagnosis, Status
from denpex.pipeline import DiagnoseOptions, diagnose_scan, scan_inputs
from denpex.taxonomy import classes

EXPECTED = "expected.json"
NOT_INPUTS = frozenset({EXPECTED, "README.md", "SOURCE.md", "source.md"})
BIN_EDGES = (0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


class Expected(BaseModel):
    """The label of one case; extra fields (scenario, seed, notes, ...) are kept, not scored."""

    model_config = ConfigDict(extra="allow")

    case: str
    expect_failure: bool = True
    failure_class: str | None
    category: str | None
    originating_rank: int | None
    misleading: bool = False


class CaseResult(BaseModel):
    case: str
    expected_class: str | None
    predicted_class: str | None
    top3: list[str]
    status: Status
    confidence: float | None
    expected_rank: int | None
    predicted_rank: int | None
    category_ok: bool
    class_ok: bool
    top3_ok: bool
    rank_ok: bool
    misleading: bool
    latency_ms: float
    top_signature: str | None
    fired: list[str]
    error: str | None = None


class ReliabilityBin(BaseModel):
    low: float
    high: float
    answers: int
    mean_confidence: float
    accuracy: float


class Subset(BaseModel):
    """Shares of correct answers; None when the subset has no cases."""

    cases: int
    class_top1: float | None
    class_top3: float | None
    category: float | None
    originating_rank: float | None


class SignatureScore(BaseModel):
    signature_id: str
    role: str
    failure_class: str | None
    fired_in: int = Field(description="cases in which it matched at least once")
    fired_precision: float | None = Field(
        description="of those, the share whose true class is this signature's class"
    )
    recall: float | None = Field(
        description="of the cases of this class, the share in which it matched"
    )
    chosen: int = Field(description="cases in which it was the top root cause")
    chosen_precision: float | None


class HeldOut(BaseModel):
    """Unseen-failure simulation: each case re-diagnosed without the signature family that
    settled it, as if that failure mode had never been written down. Wrong answers are expected
    here; what matters is that their confidence is low and few of them are confident."""

    cases: int
    families: list[str]
    class_top1: float | None
    confident_answers: int
    confident_but_wrong: int
    confident_but_wrong_rate: float
    expected_calibration_error: float
    reliability: list[ReliabilityBin]
    combined_expected_calibration_error: float = Field(
        description="calibration over the corpus answers and these together"
    )
    combined_reliability: list[ReliabilityBin]
    results: list[CaseResult]


class EvalReport(BaseModel):
    corpus: str
    rules_version: str
    cases: int
    overall: Subset
    misleading: Subset
    confident_answers: int
    confident_but_wrong: int
    confident_but_wrong_rate: float
    expected_calibration_error: float
    reliability: list[ReliabilityBin]
    latency_ms: dict[str, float]
    results: list[CaseResult]
    by_signature: list[SignatureScore] = Field(default_factory=list)
    held_out: HeldOut | None = None


def case_dirs(corpus: Path) -> list[Path]:
    found = sorted(p.parent for p in corpus.glob(f"*/{EXPECTED}"))
    if not found:
        raise InputError(f"{corpus}: no case directories with an {EXPECTED}")
    return found


def case_inputs(case: Path) -> list[str]:
    return [str(p) for p in sorted(case.iterdir()) if p.name not in NOT_INPUTS]


def load_expected(case: Path) -> Expected:
    try:
        expected = Expected.model_validate_json((case / EXPECTED).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise InputError(f"{case / EXPECTED}: {error}") from None
    if expected.failure_class is not None and expected.failure_class not in classes():
        raise InputError(f"{case / EXPECTED}: unknown class {expected.failure_class!r}")
    return expected


def _predicted(diagnosis: Diagnosis) -> tuple[str | None, float | None, int | None, str | None]:
    if diagnosis.status is Status.no_failure or not diagnosis.root_causes:
        return None, None, None, None
    top = diagnosis.root_causes[0]
    return top.failure_class, top.confidence, top.originating_rank, top.category


def score_case(
    expected: Expected, diagnosis: Diagnosis, latency_ms: float, fired: list[str]
) -> CaseResult:
    predicted, confidence, rank, category = _predicted(diagnosis)
    top3 = [r.failure_class for r in diagnosis.root_causes[:3]]
    if diagnosis.status is Status.no_failure:
        top3 = []
    class_ok = predicted == expected.failure_class
    return CaseResult(
        case=expected.case,
        expected_class=expected.failure_class,
        predicted_class=predicted,
        top3=top3,
        status=diagnosis.status,
        confidence=confidence,
        expected_rank=expected.originating_rank,
        predicted_rank=rank,
        category_ok=category == expected.category,
        class_ok=class_ok,
        top3_ok=class_ok or expected.failure_class in top3,
        rank_ok=rank == expected.originating_rank,
        misleading=expected.misleading,
        latency_ms=round(latency_ms, 1),
        top_signature=diagnosis.root_causes[0].signature_id if predicted else None,
        fired=fired,
    )


def _share(flags: Iterable[bool]) -> float:
    values = list(flags)
    return round(sum(values) / len(values), 4) if values else 0.0


def subset(results: list[CaseResult]) -> Subset:
    if not results:
        return Subset(
            cases=0, class_top1=None, class_top3=None, category=None, originating_rank=None
        )
    return Subset(
        cases=len(results),
        class_top1=_share(r.class_ok for r in results),
        class_top3=_share(r.top3_ok for r in results),
        category=_share(r.category_ok for r in results),
        originating_rank=_share(r.rank_ok for r in results),
    )


def reliability(results: list[CaseResult]) -> tuple[list[ReliabilityBin], float]:
    """Answers binned by stated confidence, with each bin's accuracy; and the calibration error."""
    answered = [r for r in results if r.confidence is not None]
    bins: list[ReliabilityBin] = []
    weighted_gap = 0.0
    for low, high in pairwise(BIN_EDGES):
        inside = [
            r
            for r in answered
            if low <= (r.confidence or 0.0) < high or (high == 1.0 and r.confidence == 1.0)
        ]
        if not inside:
            continue
        mean_confidence = statistics.fmean(r.confidence or 0.0 for r in inside)
        accuracy = _share(r.class_ok for r in inside)
        weighted_gap += len(inside) * abs(mean_confidence - accuracy)
        bins.append(
            ReliabilityBin(
                low=low,
                high=high,
                answers=len(inside),
                mean_confidence=round(mean_confidence, 4),
                accuracy=accuracy,
            )
        )
    return bins, round(weighted_gap / len(answered), 4) if answered else 0.0


def by_signature(results: list[CaseResult], library: Library) -> list[SignatureScore]:
    scores = []
    for signature in library.signatures:
        fired = [r for r in results if signature.id in r.fired]
        # Only a root cause claims its class; symptoms and context are reported by count.
        is_root = signature.role == "root_cause"
        of_class = [r for r in results if r.expected_class == signature.failure_class]
        chosen = [r for r in results if r.top_signature == signature.id]
        if not fired and not of_class:
            continue
        scores.append(
            SignatureScore(
                signature_id=signature.id,
                role=signature.role,
                failure_class=signature.failure_class,
                fired_in=len(fired),
                fired_precision=(
                    _share(r.expected_class == signature.failure_class for r in fired)
                    if fired and is_root
                    else None
                ),
                recall=(
                    _share(signature.id in r.fired for r in of_class)
                    if of_class and is_root
                    else None
                ),
                chosen=len(chosen),
                chosen_precision=_share(r.class_ok for r in chosen) if chosen else None,
            )
        )
    return scores


def evaluate(
    corpus: Path,
    library: Library,
    options: DiagnoseOptions,
    progress: Callable[[str], None] | None = None,
) -> EvalReport:
    matcher = Matcher(library, options.backend, options.cache_dir)
    results: list[CaseResult] = []
    for case in case_dirs(corpus):
        expected = load_expected(case)
        started = time.perf_counter()
        try:
            inputs = case_inputs(case)
            scan = scan_inputs(inputs, matcher)
            abnormal = unexplained_lines(inputs, None, options.backend)
            diagnosis = diagnose_scan(scan, library, options, started, abnormal=abnormal)
        except DenpexError as error:
            raise InputError(f"case {case.name}: {error}") from None
        latency = (time.perf_counter() - started) * 1000
        fired = sorted({m.signature_id for m in scan.matches})
        results.append(score_case(expected, diagnosis, latency, fired))
        if progress is not None:
            progress(case.name)
    bins, ece = reliability(results)
    confident = [r for r in results if r.status is Status.confident]
    wrong = [r for r in confident if not r.class_ok]
    latencies = [r.latency_ms for r in results]
    return EvalReport(
        corpus=str(corpus),
        rules_version=library.label,
        cases=len(results),
        overall=subset(results),
        misleading=subset([r for r in results if r.misleading]),
        confident_answers=len(confident),
        confident_but_wrong=len(wrong),
        confident_but_wrong_rate=round(len(wrong) / len(confident), 4) if confident else 0.0,
        expected_calibration_error=ece,
        reliability=bins,
        latency_ms={
            "mean": round(statistics.fmean(latencies), 1),
            "p50": round(statistics.median(latencies), 1),
            "p95": round(sorted(latencies)[int(0.95 * (len(latencies) - 1))], 1),
            "max": round(max(latencies), 1),
        },
        results=results,
        by_signature=by_signature(results, library),
    )


def _family_of(result: CaseResult) -> str | None:
    signature = result.top_signature
    if signature is None or signature.startswith("flight_recorder."):
        return None  # dump-based answers have no family to withhold
    return signature.split(".", 1)[0]


def held_out(
    corpus: Path,
    report: EvalReport,
    library: Library,
    options: DiagnoseOptions,
    cache_dir: Path | None = None,
) -> HeldOut:
    """Re-diagnose each case that a signature family settled, without that family."""
    families = sorted({f for r in report.results if (f := _family_of(r)) is not None})
    matchers = {
        family: Matcher(library.without_families([family]), options.backend, cache_dir)
        for family in families
    }
    by_name = {case.name: case for case in case_dirs(corpus)}
    results: list[CaseResult] = []
    for original in report.results:
        family = _family_of(original)
        if family is None:
            continue
        case = by_name[original.case]
        matcher = matchers[family]
        started = time.perf_counter()
        inputs = case_inputs(case)
        scan = scan_inputs(inputs, matcher)
        abnormal = unexplained_lines(inputs, None, options.backend)
        diagnosis = diagnose_scan(scan, matcher.library, options, started, abnormal=abnormal)
        latency = (time.perf_counter() - started) * 1000
        results.append(score_case(load_expected(case), diagnosis, latency, []))
    bins, ece = reliability(results)
    combined_bins, combined_ece = reliability([*report.results, *results])
    confident = [r for r in results if r.status is Status.confident]
    wrong = [r for r in confident if not r.class_ok]
    return HeldOut(
        cases=len(results),
        families=families,
        class_top1=subset(results).class_top1,
        confident_answers=len(confident),
        confident_but_wrong=len(wrong),
        confident_but_wrong_rate=round(len(wrong) / len(confident), 4) if confident else 0.0,
        expected_calibration_error=ece,
        reliability=bins,
        combined_expected_calibration_error=combined_ece,
        combined_reliability=combined_bins,
        results=results,
    )


def check_thresholds(report: EvalReport, thresholds: dict[str, Any]) -> list[str]:
    """Which thresholds the report breaks. Keys are dotted paths into the report; a `min_`
    prefix means the figure must be at least the value, `max_` at most."""
    document = json.loads(report.model_dump_json())
    failures = []
    for key, limit in thresholds.items():
        bound, _, path = key.partition("_")
        value: Any = document
        for part in path.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if value is None:
            failures.append(f"{path} was not measured (run with the options that measure it)")
            continue
        if bound == "min" and value < limit:
            failures.append(f"{path} = {value} is below the minimum {limit}")
        elif bound == "max" and value > limit:
            failures.append(f"{path} = {value} is above the maximum {limit}")
        elif bound not in ("min", "max"):
            failures.append(f"{key}: threshold keys start with min_ or max_")
    return failures
