"""Hypotheses from Flight Recorder evidence: what the collectives' progress says.

Consumes a hang triage report and the matches from the logs; produces hypotheses in the same
shape as the log-based ones, so `hypotheses.py` can rank them together. The dump candidate's
kind decides the class (`dump_kinds` in taxonomy.yaml):

- `mismatched` (a rank called another collective, size or dtype at the same sequence id) is
  `collective_mismatch`, a program bug on that rank;
- `never_entered` (the rank was alive, it dumped, but never called the collective its peers
  wait in) is a `straggler` when the job's steps were slowing down before the stall, and a
  `collective_timeout` naming that rank otherwise (it hung before the collective);
- `stopped_reporting` (no dump: the process died, was stopped or lost its host) and `stalled`
  (inside the collective) are `collective_timeout`, naming the ranks the dumps single out.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from itertools import pairwise

from denpex.events import Attribution, Match
from denpex.hang.models import Candidate, HangReport
from denpex.ingest.numbers import identifier
from denpex.reason.hypothesis import Hypothesis
from denpex.signatures.signature import Role
from denpex.taxonomy import class_of_dump_kind

SLOWDOWN_FACTOR = 4.0
"""A step this many times longer than the job's usual step means the job was slowing down."""
MIN_SLOW_STEP_S = 2.0


def step_intervals(matches: Sequence[Match]) -> list[float]:
    """Seconds between consecutive step markers of each rank, in step order."""
    by_emitter: dict[tuple[str, int | None], dict[int, float]] = defaultdict(dict)
    for match in matches:
        step = identifier(match.captures.get("step"))
        if match.signature.clock_anchor is None or step is None:
            continue
        if match.event.time is None or match.event.time_inferred:
            continue
        by_emitter[(match.event.source, match.event.rank)][step] = match.event.time
    intervals: list[float] = []
    for times in by_emitter.values():
        steps = sorted(times)
        intervals += [times[b] - times[a] for a, b in pairwise(steps) if b == a + 1]
    return intervals


def slowing_down(matches: Sequence[Match]) -> bool:
    """Whether the last steps before the stall took far longer than the job's usual step."""
    intervals = step_intervals(matches)
    if len(intervals) < 4:
        return False
    usual = statistics.median(intervals)
    slowest = max(intervals)
    return slowest >= MIN_SLOW_STEP_S and slowest >= SLOWDOWN_FACTOR * max(usual, 1e-3)


def _class_of(candidate: Candidate, slowing: bool) -> str:
    return class_of_dump_kind(candidate.kind, slowing=slowing)


def _waiting_lines(candidate: Candidate, matches: Sequence[Match]) -> list[Match]:
    """The log lines of the ranks left waiting: what the collective's stall looked like."""
    culprits = set(candidate.ranks)
    return [
        m
        for m in matches
        if m.role is Role.symptom and m.event.rank is not None and m.event.rank not in culprits
    ]


def hang_hypotheses(report: HangReport, matches: Sequence[Match]) -> list[Hypothesis]:
    """One hypothesis per dump candidate, most likely first; [] when there was no hang."""
    slowing = slowing_down(matches)
    hypotheses = []
    for candidate in report.candidates:
        single = len(candidate.ranks) == 1
        host = candidate.hosts[0] if single and len(candidate.hosts) == 1 else None
        hypotheses.append(
            Hypothesis(
                failure_class=_class_of(candidate, slowing),
                signature=None,
                roots=[],
                prior=candidate.confidence,
                originating=Attribution(rank=candidate.ranks[0], host=host) if single else None,
                first_seen=candidate.since.timestamp() if candidate.since else None,
                dump_candidate=candidate,
                corroboration=_waiting_lines(candidate, matches),
            )
        )
    return hypotheses
