"""The causal-timeline excerpt: the abnormal lines of a failure, in corrected time order.

Consumes the ordered timeline (the rules' matches with per-host clock offsets) and the
harvested abnormal lines the rules did not match; produces a bounded list of `ExcerptLine`s
(repeats of one template folded into its first occurrence) and the retrieval query: the
distinct masked templates of the first abnormal events. Rule matches are preferred over
harvested lines when the excerpt must be cut, and root causes over symptoms.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from denpex.events import Match
from denpex.ingest.timestamps import to_datetime
from denpex.retrieval.masking import mask
from denpex.signatures.signature import Role
from denpex.store.records import ExcerptLine
from denpex.timeline.clock import HostClock
from denpex.timeline.order import OrderedTimeline

EXCERPT_LINES = 48
QUERY_LINES = 16
HARVESTED = "abnormal"
_TIER = {Role.root_cause.value: 0, Role.symptom.value: 1, HARVESTED: 2}


@dataclass(frozen=True)
class _Candidate:
    match: Match
    time: float | None
    role: str

    @property
    def order(self) -> tuple[int, float, str, int]:
        event = self.match.event
        if self.time is None:
            return (1, 0.0, event.source, event.line)
        return (0, self.time, event.source, event.line)


def _corrected(match: Match, clocks: dict[str, HostClock]) -> float | None:
    clock = clocks.get(match.event.host or "")
    if clock is None or match.event.time is None:
        return match.event.time
    return match.event.time - clock.offset_s


def build_excerpt(
    timeline: OrderedTimeline, harvested: Sequence[Match], limit: int = EXCERPT_LINES
) -> list[ExcerptLine]:
    """At most `limit` distinct abnormal lines, earliest first."""
    candidates = [
        _Candidate(m, m.event.time, m.role.value)
        for m in timeline.matches
        if m.role is not Role.context
    ]
    candidates += [_Candidate(m, _corrected(m, timeline.clocks), HARVESTED) for m in harvested]
    candidates.sort(key=lambda c: c.order)
    hosts = {c.match.event.host for c in candidates if c.match.event.host}
    first_of: dict[str, _Candidate] = {}
    repeats: dict[str, int] = {}
    for candidate in candidates:
        template = mask(candidate.match.event.text, hosts)
        if not template:
            continue
        repeats[template] = repeats.get(template, 0) + 1
        first_of.setdefault(template, candidate)
    kept = sorted(first_of.items(), key=lambda item: (_TIER[item[1].role], item[1].order))
    chosen = sorted(kept[:limit], key=lambda item: item[1].order)
    return [_line(candidate, template, repeats[template]) for template, candidate in chosen]


def _line(candidate: _Candidate, template: str, repeats: int) -> ExcerptLine:
    event = candidate.match.event
    harvested = candidate.role == HARVESTED
    return ExcerptLine(
        source=event.source,
        line=event.line,
        rank=event.rank,
        host=event.host,
        time=to_datetime(candidate.time),
        time_inferred=event.time_inferred,
        text=event.text,
        template=template,
        signature_id=None if harvested else candidate.match.signature_id,
        role=candidate.role,
        fallback=not harvested and candidate.match.signature.fallback,
        repeats=repeats,
    )


def prioritised(excerpt: Sequence[ExcerptLine], limit: int) -> list[int]:
    """Indexes of at most `limit` lines, rule matches and root causes first, in causal order."""
    ranked = sorted(range(len(excerpt)), key=lambda i: (_TIER.get(excerpt[i].role, len(_TIER)), i))
    return sorted(ranked[:limit])


def query_templates(excerpt: Sequence[ExcerptLine], limit: int = QUERY_LINES) -> list[str]:
    """The distinct templates of the first abnormal events, rule matches first when cut."""
    return list(dict.fromkeys(excerpt[i].template for i in prioritised(excerpt, limit)))
