"""What abnormal lines no signature explains say: that something failed, and where.

Consumes the abnormal lines the lexicon judged (`denpex.hybrid.abnormal`) in input order;
produces the origin they point at and the `unknown` root cause a diagnosis carries when no
signature matched but the inputs are not those of a healthy run. The origin is named only when
the lines determine it, leaving out lines whose signature does not locate an origin (a rank
reporting its peer's closed connection): one rank (or one host) printed them all, or one rank's
first abnormal line precedes every other rank's by more than `LEAD_S` on real timestamps.
"""

from __future__ import annotations

from collections.abc import Sequence, Set

from denpex.events import Attribution, Match
from denpex.ingest.timestamps import to_datetime
from denpex.models import RootCause, Source
from denpex.reason.root_causes import evidence_of
from denpex.taxonomy import failure_class

LEAD_S = 1.0
EVIDENCE_LINES = 8
UNEXPLAINED_CONFIDENCE = 0.05
"""The lexicon marks lines; it never classifies them: an unexplained failure is `unknown`."""


def origin_of(lines: Sequence[Match]) -> Attribution | None:
    """The rank (and its host) or the host the abnormal lines point at, when they determine it."""
    lines = [m for m in lines if m.signature.traits.locates_origin] or lines
    ranked = [m for m in lines if m.event.rank is not None]
    if not ranked:
        hosts = {m.event.host for m in lines if m.event.host}
        return Attribution(host=hosts.pop()) if len(hosts) == 1 else None
    first: dict[int, Match] = {}
    for match in ranked:
        rank = match.event.rank
        assert rank is not None
        known = first.get(rank)
        if known is None or _earlier(match, known):
            first[rank] = match
    if len(first) == 1:
        return _who(ranked, next(iter(first)))
    timed = [m for m in first.values() if m.event.time is not None and not m.event.time_inferred]
    if len(timed) != len(first):
        return None
    timed.sort(key=lambda m: m.event.time or 0.0)
    lead = (timed[1].event.time or 0.0) - (timed[0].event.time or 0.0)
    if lead <= LEAD_S:
        return None
    rank = timed[0].event.rank
    assert rank is not None
    return _who(ranked, rank)


def _earlier(one: Match, other: Match) -> bool:
    if one.event.time is None or other.event.time is None:
        return False
    return one.event.time < other.event.time


def _who(ranked: Sequence[Match], rank: int) -> Attribution:
    own = [m for m in ranked if m.event.rank == rank]
    hosts = {m.event.host for m in own if m.event.host}
    local = {m.event.who.local_rank for m in own if m.event.who.local_rank is not None}
    return Attribution(
        rank=rank,
        host=hosts.pop() if len(hosts) == 1 else None,
        local_rank=local.pop() if len(local) == 1 else None,
    )


def unexplained_cause(lines: Sequence[Match], ranks_in_evidence: Set[int]) -> RootCause:
    """The `unknown` cause of a failure no signature names, with its abnormal lines as
    evidence and the origin they determine.

    `ranks_in_evidence`: every rank with output among the inputs or a line in the timeline.
    When the origin's rank is the only one, nothing says the others did not fail alike (an
    error of unknown kind may be one every rank meets): the rank stays a candidate."""
    fc = failure_class("unknown")
    origin = origin_of(lines)
    candidates: list[int] = []
    candidate_reason = ""
    if origin is not None and origin.rank is not None and set(ranks_in_evidence) <= {origin.rank}:
        candidates = [origin.rank]
        candidate_reason = (
            f"only rank {origin.rank}'s output is in evidence: whether the other ranks met "
            "the same error, or were left waiting on this one, is not shown"
        )
        origin = Attribution(host=origin.host)
    timed = [m.event.time for m in lines if m.event.time is not None]
    evidence = [evidence_of(m, with_context=i == 0) for i, m in enumerate(lines[:EVIDENCE_LINES])]
    return RootCause(
        failure_class=fc.id,
        category=fc.category,
        signature_id=None,
        confidence=UNEXPLAINED_CONFIDENCE,
        source=Source.rules,
        best_effort=False,
        originating_rank=origin.rank if origin else None,
        originating_host=origin.host if origin else None,
        originating_local_rank=origin.local_rank if origin else None,
        first_seen=to_datetime(min(timed)) if timed else None,
        title=f"{len(lines)} abnormal line(s) that no failure signature explains",
        caveat=(
            "No signature matched these lines; they report that something failed, not what. "
            "Read the first of them and what precedes it."
        ),
        evidence=evidence,
        candidate_ranks=candidates,
        candidate_reason=candidate_reason,
        next_steps=[
            "Read the first abnormal line and the traceback or messages just before it.",
            "When the cause is known, confirm it (denpex curate confirm) so the next run knows.",
        ],
        owner=fc.owner,
    )


def unexplained_summary(lines: Sequence[Match]) -> str:
    first = lines[0].event.text.strip()
    quoted = f'"{first[:157]}..."' if len(first) > 160 else f'"{first}"'
    return (
        f"No failure signature matched, but {len(lines)} abnormal line(s) say the run did not "
        f"end well; the first: {quoted}."
    )
