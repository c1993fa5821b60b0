"""The hang report as terminal text or JSON.

Consumes a `HangReport`; produces a string. JSON is the report's own serialisation (the schema
in `engine/schemas/hang.schema.json`); text is for people, with long rank lists folded.
"""

from __future__ import annotations

from denpex.hang.evidence import ranks_text
from denpex.hang.models import Candidate, GroupProgress, HangReport

MAX_CANDIDATES = 6
MAX_RANK_LINES = 16


def to_json(report: HangReport) -> str:
    return report.model_dump_json(indent=2) + "\n"


def to_text(report: HangReport) -> str:
    lines = [f"hang triage: {report.status.value}", f"  {report.summary}", ""]
    if report.candidates:
        lines.append("candidates, most likely first:")
        for number, candidate in enumerate(report.candidates[:MAX_CANDIDATES], start=1):
            lines += _candidate(number, candidate)
        if len(report.candidates) > MAX_CANDIDATES:
            lines.append(f"  ... {len(report.candidates) - MAX_CANDIDATES} more (--format json)")
        lines.append("")
    lines += _plan(report)
    if report.incomplete:
        lines.append("incomplete evidence:")
        lines += [f"  - {note}" for note in report.incomplete]
        lines.append("")
    for group in report.process_groups:
        lines += _group(group)
    used = [d for d in report.dumps if d.used]
    formats = sorted({f"{d.format} {d.version}" for d in used})
    lines.append(
        f"dumps: {len(used)} used ({', '.join(formats)}), expected ranks "
        f"{ranks_text(report.expected_ranks)} (from {report.expected_ranks_from})"
    )
    for warning in report.warnings:
        lines.append(f"  warning: {warning}")
    return "\n".join(lines) + "\n"


def _candidate(number: int, candidate: Candidate) -> list[str]:
    where = f"group {candidate.process_group}" if candidate.process_group else ""
    if candidate.seq is not None:
        where += f" seq {candidate.seq}"
    hosts = f" on {', '.join(candidate.hosts)}" if candidate.hosts else ""
    lines = [
        f"  {number}. {candidate.kind.value}: rank(s) {ranks_text(candidate.ranks)}{hosts}, "
        f"{where}, confidence {candidate.confidence:.2f}",
        f"     {candidate.summary}",
    ]
    for evidence in candidate.evidence:
        sources = ", ".join(evidence.sources)
        if evidence.more_sources:
            sources += f" and {evidence.more_sources} more"
        site = f" at {evidence.call_site}" if evidence.call_site else ""
        lines.append(f"     evidence: {evidence.text}{site}" + (f" [{sources}]" if sources else ""))
    for record in candidate.support:
        mark = "support" if record.counted else "context"
        lines.append(
            f"     {mark}: {record.signature_id} {record.relation} ({record.reason}) "
            f"[{record.source}:{record.line}]"
        )
    lines += [f"     caveat: {caveat}" for caveat in candidate.caveats]
    return lines


def _plan(report: HangReport) -> list[str]:
    plan = report.isolation_plan
    if plan is None:
        return [f"isolation plan: withheld: {report.withheld_reason}", ""]
    return [
        f"isolation plan ({plan.scheduler.value}), printed for review, NOT executed:",
        f"  {plan.rationale}",
        *[f"  $ {command}" for command in plan.commands],
        "",
    ]


def _group(group: GroupProgress) -> list[str]:
    stuck = f", first unfinished seq {group.stuck_seq}" if group.stuck_seq is not None else ""
    lines = [
        f"group {group.name} ({group.desc or 'no description'}): members "
        f"{ranks_text(group.members)} (from {group.members_from}){stuck}"
    ]
    shown = group.ranks
    # At scale, list the ranks that differ from the most common progress, not all of them.
    if len(shown) > MAX_RANK_LINES:
        common = max(
            {(r.last_enqueued, r.last_completed) for r in shown},
            key=lambda key: sum((r.last_enqueued, r.last_completed) == key for r in shown),
        )
        alike = [r.rank for r in shown if (r.last_enqueued, r.last_completed) == common]
        lines.append(f"  ranks {ranks_text(alike)}: enqueued {common[0]}, completed {common[1]}")
        shown = [r for r in shown if r.rank not in set(alike)]
    for rank in shown[:MAX_RANK_LINES]:
        if rank.source is None:
            lines.append(f"  rank {rank.rank}: no dump")
            continue
        waiting = f", waiting in {rank.waiting_in}" if rank.waiting_in else ""
        lines.append(
            f"  rank {rank.rank}: enqueued {rank.last_enqueued}, completed "
            f"{rank.last_completed}{waiting}"
        )
    if len(shown) > MAX_RANK_LINES:
        lines.append(f"  ... {len(shown) - MAX_RANK_LINES} more ranks (--format json)")
    lines.append("")
    return lines
