"""The gate: a confident rules answer, or an honest statement that the rules are not sure.

Consumes ranked hypotheses, the ordered timeline and facts about the inputs; produces the
`Diagnosis`. At or above the threshold the top hypothesis is returned as `confident`. Below it,
the rules' candidates are kept as ranked alternatives under status `unknown`; when a best-effort
provider (the hybrid path) is passed in, it gets that unconfident result to improve on.

`no_failure` is said only when the evidence says the run was healthy: no signature fired and
the abnormal lines no signature explains (asked of `abnormal` only then) are none. Otherwise the
answer is `unknown`, with those lines as the evidence of an `unknown` cause.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

from denpex.events import Match
from denpex.hang.models import HangReport
from denpex.ingest.timestamps import to_datetime
from denpex.models import (
    ClockOffset,
    Diagnosis,
    FirstAbnormal,
    InputSummary,
    Provenance,
    Status,
    Timeline,
)
from denpex.reason.abnormal import unexplained_cause, unexplained_summary
from denpex.reason.hypothesis import Hypothesis
from denpex.reason.origin import ranks_in
from denpex.reason.root_causes import no_cause_summary, summary_of, to_root_cause
from denpex.signatures.signature import Role
from denpex.timeline.order import OrderedTimeline

FIRST_ABNORMAL_SHOWN = 16

BestEffortProvider = Callable[[Diagnosis, OrderedTimeline], Diagnosis]
"""Given the gate's unconfident result (`unknown` or `no_failure`) and the timeline, returns
a best-effort diagnosis, or the result unchanged when it has nothing better."""

AbnormalLines = Callable[[OrderedTimeline], Sequence[Match]]
"""Given the timeline, the abnormal lines of the inputs no signature matched, in input order."""


def timeline_summary(timeline: OrderedTimeline, input_ranks: set[int]) -> Timeline:
    matches = timeline.matches
    ranks = input_ranks | {m.event.rank for m in matches if m.event.rank is not None}
    hosts = {m.event.host for m in matches if m.event.host is not None}
    first_per_rank: dict[int | None, FirstAbnormal] = {}
    for match in matches:  # already in corrected time order
        if match.role is Role.context or match.event.rank in first_per_rank:
            continue
        first_per_rank[match.event.rank] = FirstAbnormal(
            rank=match.event.rank,
            host=match.event.host,
            time=to_datetime(match.event.time),
            signature_id=match.signature_id,
        )
    return Timeline(
        ranks_seen=len(ranks),
        hosts_seen=len(hosts),
        clock_offsets_s={h: c.offset_s for h, c in timeline.clocks.items()},
        clock_estimates={
            h: ClockOffset(
                offset_s=c.offset_s, uncertainty_s=c.uncertainty_s or 0.0, anchors=c.anchors
            )
            for h, c in timeline.clocks.items()
        },
        reordered_events=timeline.reordered,
        first_abnormal=list(first_per_rank.values())[:FIRST_ABNORMAL_SHOWN],
    )


def gate(
    *,
    hypotheses: Sequence[Hypothesis],
    timeline: OrderedTimeline,
    input_ranks: set[int],
    dropped: Mapping[tuple[str, int | None], int],
    inputs: list[InputSummary],
    warnings: list[str],
    threshold: float,
    denpex_version: str,
    rules_version: str,
    started: float,
    best_effort: BestEffortProvider | None = None,
    hang: HangReport | None = None,
    abnormal: AbnormalLines | None = None,
) -> Diagnosis:
    root_causes = [to_root_cause(h, dropped) for h in hypotheses]
    unexplained = list(abnormal(timeline)) if abnormal is not None and not root_causes else []
    if unexplained:
        status, summary = Status.unknown, unexplained_summary(unexplained)
        in_evidence = set(input_ranks) | ranks_in([*timeline.matches, *unexplained])
        root_causes = [unexplained_cause(unexplained, in_evidence)]
    elif not root_causes:
        status, summary = Status.no_failure, no_cause_summary(timeline.matches)
    elif root_causes[0].confidence >= threshold:
        status, summary = Status.confident, summary_of(root_causes[0])
    else:
        status = Status.unknown
        summary = "The rules are not confident; the likeliest candidate: " + summary_of(
            root_causes[0]
        )
    diagnosis = Diagnosis(
        status=status,
        summary=summary,
        root_causes=root_causes,
        timeline=timeline_summary(timeline, input_ranks),
        inputs=inputs,
        provenance=Provenance(
            denpex_version=denpex_version, rules_version=rules_version, elapsed_ms=0
        ),
        warnings=warnings,
        hang=hang,
    )
    if best_effort is not None and status is not Status.confident:
        diagnosis = best_effort(diagnosis, timeline)
    elapsed_ms = int((time.perf_counter() - started) * 1000)
    return diagnosis.model_copy(
        update={"provenance": diagnosis.provenance.model_copy(update={"elapsed_ms": elapsed_ms})}
    )
