"""An evaluation report for a terminal: headline figures, reliability, misses, signatures."""

from __future__ import annotations

from io import StringIO

from rich.console import Console
from rich.table import Table

from denpex.evaluation.corpus import EvalReport, RankReport, ReliabilityBin, Subset


def _percent(share: float | None) -> str:
    return "-" if share is None else f"{share:.1%}"


def _subset_row(table: Table, name: str, subset: Subset) -> None:
    table.add_row(
        name,
        str(subset.cases),
        _percent(subset.class_top1),
        _percent(subset.class_top3),
        _percent(subset.category),
        _percent(subset.originating_rank),
    )


def _reliability_table(label: str, rows: list[ReliabilityBin]) -> Table:
    table = Table(label, "answers", "mean confidence", "accuracy")
    for row in rows:
        table.add_row(
            f"[{row.low:.1f}, {row.high:.1f})",
            str(row.answers),
            f"{row.mean_confidence:.2f}",
            f"{row.accuracy:.1%}",
        )
    return table


def _print_ranks(console: Console, ranks: RankReport) -> None:
    console.print(
        f"originating rank: named in {ranks.named} of {ranks.cases} failure cases (coverage "
        f"{_percent(ranks.coverage)}), right in {_percent(ranks.named_precision)} of those; "
        f"multi-rank cases {ranks.multi_rank_cases}, rank right (a rank or null) in "
        f"{_percent(ranks.multi_rank_accuracy)}; no rank named but candidates given in "
        f"{ranks.candidates_given}, holding the labelled rank in {ranks.candidates_hold_truth}"
    )
    table = Table("named by", "kind", "named", "right", "precision")
    for kind, split in (("mechanism", ranks.by_mechanism), ("stated as", ranks.by_basis)):
        for name, row in split.items():
            table.add_row(kind, name, str(row.named), str(row.right), _percent(row.precision))
    if table.rows:
        console.print(table)


def render_eval_text(report: EvalReport) -> str:
    buffer = StringIO()
    console = Console(file=buffer, width=140, no_color=True, highlight=False)
    console.print(f"corpus {report.corpus}: {report.cases} cases, rules {report.rules_version}")
    headline = Table("cases", "n", "class top-1", "class top-3", "category", "orig. rank")
    _subset_row(headline, "all", report.overall)
    _subset_row(headline, "misleading", report.misleading)
    console.print(headline)
    console.print(
        f"confident answers: {report.confident_answers}, of which wrong: "
        f"{report.confident_but_wrong} ({report.confident_but_wrong_rate:.1%}); "
        f"expected calibration error {report.expected_calibration_error:.3f}"
    )
    console.print(_reliability_table("confidence", report.reliability))
    if report.ranks is not None:
        _print_ranks(console, report.ranks)
    latency = report.latency_ms
    console.print(
        f"latency per case: mean {latency['mean']:.0f} ms, p50 {latency['p50']:.0f} ms, "
        f"p95 {latency['p95']:.0f} ms, max {latency['max']:.0f} ms"
    )
    misses = [r for r in report.results if not (r.class_ok and r.rank_ok)]
    if misses:
        table = Table("case", "expected", "predicted", "conf.", "exp. rank", "pred. rank")
        for r in misses:
            table.add_row(
                r.case,
                str(r.expected_class),
                str(r.predicted_class),
                "-" if r.confidence is None else f"{r.confidence:.2f}",
                str(r.expected_rank),
                str(r.predicted_rank),
            )
        console.print("misses (class or rank):")
        console.print(table)
    if report.held_out is not None:
        held = report.held_out
        console.print(
            f"unseen-failure simulation ({held.cases} cases re-diagnosed without the family "
            f"that settled them): class top-1 {_percent(held.class_top1)}; confident "
            f"answers {held.confident_answers}, of which wrong {held.confident_but_wrong} "
            f"({held.confident_but_wrong_rate:.1%}); calibration error "
            f"{held.expected_calibration_error:.3f}, with the corpus answers "
            f"{held.combined_expected_calibration_error:.3f}"
        )
        console.print(_reliability_table("confidence (corpus + unseen)", held.combined_reliability))
    if report.silent is not None:
        silent = report.silent
        console.print(
            f"silent findings ({silent.cases} labelled cases, {silent.clean_cases} clean; "
            f"clean cases with a false alarm: {silent.false_alarm_cases}): precision "
            f"{_percent(silent.precision)}, recall {_percent(silent.recall)}"
        )
        table = Table(
            "finding", "expected", "found", "right", "precision", "recall", "onset ±2", "ranks"
        )
        for k in silent.kinds:
            table.add_row(
                k.failure_class,
                str(k.expected),
                str(k.found),
                str(k.true_positives),
                _percent(k.precision),
                _percent(k.recall),
                _percent(k.onset_within_2_steps),
                _percent(k.ranks_right),
            )
        if silent.kinds:
            console.print(table)
    if report.by_signature:
        table = Table(
            "signature", "role", "fired in", "precision", "recall", "chosen", "chosen precision"
        )
        for s in report.by_signature:
            table.add_row(
                s.signature_id,
                s.role,
                str(s.fired_in),
                "-" if s.fired_precision is None else f"{s.fired_precision:.0%}",
                "-" if s.recall is None else f"{s.recall:.0%}",
                str(s.chosen),
                "-" if s.chosen_precision is None else f"{s.chosen_precision:.0%}",
            )
        console.print(table)
    return buffer.getvalue()
