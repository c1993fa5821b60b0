"""The scorer behind `denpex eval`: diagnoses every labelled case and measures the answers.

Consumes a corpus directory (`<case>/expected.json` beside the case's inputs) and diagnosis
options; produces an `EvalReport`: class accuracy (top-1, top-3), category accuracy,
originating-rank accuracy (split by the mechanism that found the rank and by how the evidence
stated it, with the coverage and precision of named ranks), the rate of confident-but-wrong
answers, a reliability table of
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
from denpex.hybrid.harvest import abnormal_lines
from denpex.match.scan import Matcher
from denpex.models import Diagnosis, Status
from denpex.pipeline import DiagnoseOptions, diagnose_scan, scan_inputs
from denpex.signatures.library import Library
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


class SilentLabel(BaseModel):
    """A silent finding as labelled or found: its class, onset step and first ranks."""

    failure_class: str
    step: int | None = None
    ranks: list[int] | None = None


class SilentKindScore(BaseModel):
    failure_class: str
    expected: int
    found: int
    true_positives: int
    precision: float | None
    recall: float | None
    onset_within_2_steps: float | None = Field(
        description="of the true positives with a labelled step, the share found within 2 steps"
    )
    ranks_right: float | None = Field(
        description="of the true positives with labelled ranks, the share naming exactly them"
    )


class SilentScore(BaseModel):
    """Silent findings against the labels of the cases that carry them and the clean runs."""

    cases: int
    clean_cases: int
    false_alarm_cases: int = Field(description="clean cases with any silent finding")
    precision: float | None
    recall: float | None
    kinds: list[SilentKindScore]


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
    silent_expected: list[SilentLabel] | None = Field(
        None, description="silent findings the case shows (labelled cases and clean runs only)"
    )
    silent_found: list[SilentLabel] = Field(default_factory=list)
    rank_mechanism: str | None = None
    """How the top answer's rank was found (`RankFinding.mechanism`), when it names one."""
    rank_basis: str | None = None
    """How the evidence stated it: prefix, file_name, line, launcher, inferred."""
    candidate_ranks: list[int] = Field(default_factory=list)
    world_size: int | None = None
    """The job's size as labelled; a case with more than one rank is a multi-rank case."""


class RankSplit(BaseModel):
    """Named ranks of one kind: how many, how many right."""

    named: int
    right: int
    precision: float | None


class RankReport(BaseModel):
    """The originating rank: how often one is named, how often it is right, and how."""

    cases: int = Field(description="failure cases (clean runs left out)")
    named: int = Field(description="cases whose top answer names a rank")
    coverage: float | None = Field(description="share of failure cases that name a rank")
    named_precision: float | None = Field(description="of the named ranks, the share right")
    multi_rank_cases: int = Field(description="failure cases labelled with world_size > 1")
    multi_rank_accuracy: float | None = Field(
        description="originating_rank right (a rank or null) on the multi-rank cases"
    )
    candidates_hold_truth: int = Field(
        description="cases with a labelled rank, none named, whose candidate_ranks include it"
    )
    candidates_given: int = Field(description="cases with no rank named but candidates given")
    by_mechanism: dict[str, RankSplit] = Field(default_factory=dict)
    by_basis: dict[str, RankSplit] = Field(default_factory=dict)


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
    silent: SilentScore | None = None
    ranks: RankReport | None = None


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
    top = diagnosis.root_causes[0] if predicted else None
    finding = top.rank_finding if top is not None else None
    world_size = getattr(expected, "world_size", None)
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
        rank_mechanism=finding.mechanism if finding is not None and rank is not None else None,
        rank_basis=(
            str(finding.basis)
            if finding is not None and finding.basis is not None and rank is not None
            else None
        ),
        candidate_ranks=list(top.candidate_ranks) if top is not None else [],
        world_size=world_size if isinstance(world_size, int) else None,
        silent_expected=_silent_labels(expected),
        silent_found=[
            SilentLabel(failure_class=f.failure_class, step=f.step, ranks=f.ranks)
            for f in diagnosis.silent
        ],
    )


def _silent_labels(expected: Expected) -> list[SilentLabel] | None:
    """The case's silent findings: as labelled, none for a clean run, else not labelled."""
    labelled = (expected.model_extra or {}).get("silent_findings")
    if labelled is not None:
        return [SilentLabel.model_validate(item) for item in labelled]
    return [] if not expected.expect_failure else None


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def silent_score(results: list[CaseResult]) -> SilentScore | None:
    """Per class: a found class the case is labelled with is a true positive, any other a
    false positive; a labelled class not found is a miss."""
    labelled = [r for r in results if r.silent_expected is not None]
    if not labelled:
        return None
    kinds = sorted(
        {x.failure_class for r in labelled for x in [*(r.silent_expected or []), *r.silent_found]}
    )
    scores = []
    for kind in kinds:
        expected = found = hits = 0
        steps: list[bool] = []
        ranks: list[bool] = []
        for result in labelled:
            want = [x for x in result.silent_expected or [] if x.failure_class == kind]
            got = [x for x in result.silent_found if x.failure_class == kind]
            expected, found = expected + len(want), found + len(got)
            if want and got:
                hits += 1
                if want[0].step is not None and got[0].step is not None:
                    steps.append(abs(want[0].step - got[0].step) <= 2)
                if want[0].ranks is not None:
                    ranks.append(sorted(want[0].ranks) == sorted(got[0].ranks or []))
        scores.append(
            SilentKindScore(
                failure_class=kind,
                expected=expected,
                found=found,
                true_positives=hits,
                precision=_ratio(hits, found),
                recall=_ratio(hits, expected),
                onset_within_2_steps=_ratio(sum(steps), len(steps)),
                ranks_right=_ratio(sum(ranks), len(ranks)),
            )
        )
    clean = [r for r in labelled if not r.silent_expected]
    return SilentScore(
        cases=len(labelled),
        clean_cases=len(clean),
        false_alarm_cases=sum(1 for r in clean if r.silent_found),
        precision=_ratio(sum(k.true_positives for k in scores), sum(k.found for k in scores)),
        recall=_ratio(sum(k.true_positives for k in scores), sum(k.expected for k in scores)),
        kinds=scores,
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


def _split(results: list[CaseResult], key: Callable[[CaseResult], str | None]) -> dict:
    groups: dict[str, list[CaseResult]] = {}
    for result in results:
        groups.setdefault(key(result) or "unstated", []).append(result)
    return {
        name: RankSplit(
            named=len(group),
            right=sum(r.rank_ok for r in group),
            precision=_share(r.rank_ok for r in group),
        )
        for name, group in sorted(groups.items())
    }


def rank_report(results: list[CaseResult]) -> RankReport:
    """Coverage and precision of named originating ranks, by mechanism and by basis."""
    failures = [r for r in results if r.expected_class is not None]
    named = [r for r in failures if r.predicted_rank is not None]
    multi = [r for r in failures if r.world_size is not None and r.world_size > 1]
    unnamed = [r for r in failures if r.predicted_rank is None]
    return RankReport(
        cases=len(failures),
        named=len(named),
        coverage=_share(r.predicted_rank is not None for r in failures) if failures else None,
        named_precision=_share(r.rank_ok for r in named) if named else None,
        multi_rank_cases=len(multi),
        multi_rank_accuracy=_share(r.rank_ok for r in multi) if multi else None,
        candidates_hold_truth=sum(
            r.expected_rank is not None and r.expected_rank in r.candidate_ranks for r in unnamed
        ),
        candidates_given=sum(bool(r.candidate_ranks) for r in unnamed),
        by_mechanism=_split(named, lambda r: r.rank_mechanism),
        by_basis=_split(named, lambda r: r.rank_basis),
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
    # The results each signature fired in, was chosen in and each class expected in, in the
    # results' order, found in one pass: 50,000 signatures each looking through every result
    # three times took most of an evaluation.
    fired_in: dict[str, list[CaseResult]] = {}
    chosen_in: dict[str | None, list[CaseResult]] = {}
    expecting: dict[str | None, list[CaseResult]] = {}
    for result in results:
        for signature_id in dict.fromkeys(result.fired):
            fired_in.setdefault(signature_id, []).append(result)
        chosen_in.setdefault(result.top_signature, []).append(result)
        expecting.setdefault(result.expected_class, []).append(result)
    scores = []
    for signature in library.signatures:
        fired = fired_in.get(signature.id, [])
        # Only a root cause claims its class; symptoms and context are reported by count.
        is_root = signature.role == "root_cause"
        of_class = expecting.get(signature.failure_class, [])
        chosen = chosen_in.get(signature.id, [])
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
    abnormal = abnormal_lines(options.backend, options.cache_dir)
    results: list[CaseResult] = []
    for case in case_dirs(corpus):
        expected = load_expected(case)
        started = time.perf_counter()
        try:
            inputs = case_inputs(case)
            scan = scan_inputs(inputs, matcher, abnormal=abnormal)
            diagnosis = diagnose_scan(scan, library, options, started)
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
        silent=silent_score(results),
        ranks=rank_report(results),
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
    whole = Matcher(library, options.backend, cache_dir)
    matchers = {family: whole.without_families([family]) for family in families}
    by_name = {case.name: case for case in case_dirs(corpus)}
    abnormal = abnormal_lines(options.backend, cache_dir)
    results: list[CaseResult] = []
    for original in report.results:
        family = _family_of(original)
        if family is None:
            continue
        case = by_name[original.case]
        matcher = matchers[family]
        started = time.perf_counter()
        inputs = case_inputs(case)
        scan = scan_inputs(inputs, matcher, abnormal=abnormal)
        diagnosis = diagnose_scan(scan, matcher.library, options, started)
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
