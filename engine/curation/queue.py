"""The curation queue: queued incidents grouped by what they printed, most recurrent first.

Consumes the incident store; produces `QueueGroup`s. Incidents fall in one group when the Drain3
template clusters of their unsettled lines (abnormal lines no signature read, or only a generic
fallback did) overlap by at least half (Jaccard), linked transitively; groups are ordered by how
many incidents they hold, then by their newest. Each group carries its evidence (the
representative incident's abnormal lines), its best-effort draft (that incident's diagnosis)
and the similar incidents outside it (stored incidents of any state that printed one of its
masked lines, with their labels).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from denpex.curation.mining import clusters_of
from denpex.store.records import ExcerptLine, Incident
from denpex.store.schema import CurationState
from denpex.store.store import IncidentStore

MIN_OVERLAP = 0.5
EVIDENCE_LINES = 8
SIMILAR = 5


@dataclass(frozen=True)
class Similar:
    incident_id: str
    shared_lines: int
    curation_state: str
    label: str | None
    """The confirmed class, or the confident rules class; None when nothing is known."""
    summary: str


@dataclass
class QueueGroup:
    incidents: list[Incident]
    """Newest first; the first is the group's representative."""
    similar: list[Similar] = field(default_factory=list)

    @property
    def representative(self) -> Incident:
        return self.incidents[0]

    @property
    def evidence(self) -> list[ExcerptLine]:
        return self.representative.excerpt[:EVIDENCE_LINES]

    @property
    def draft_class(self) -> str | None:
        """The best effort's (or the rules') leading class for the representative."""
        return self.representative.failure_class

    def as_dict(self) -> dict[str, object]:
        first = self.representative
        diagnosis = first.diagnosis
        return {
            "recurrence": len(self.incidents),
            "incidents": [
                {
                    "id": i.id,
                    "created_at": i.created_at.isoformat(),
                    "status": i.status,
                    "failure_class": i.failure_class,
                    "confidence": i.confidence,
                }
                for i in self.incidents
            ],
            "evidence": [line.model_dump(mode="json") for line in self.evidence],
            "best_effort": {
                "status": diagnosis.status.value,
                "summary": diagnosis.summary,
                "root_causes": [
                    {
                        "failure_class": c.failure_class,
                        "confidence": c.confidence,
                        "source": c.source.value,
                    }
                    for c in diagnosis.root_causes[:3]
                ],
            },
            "similar": [s.__dict__ for s in self.similar],
        }


def grouped_lines(incident: Incident) -> list[str]:
    """The lines an incident is grouped by: abnormal lines no signature settled, else all. A
    line only a generic fallback read (any uncaught exception) is not settled: the fallback
    names the line, not its cause, and a failure new to the library is as often read by it as
    by nothing."""
    unsettled = [
        line.text for line in incident.excerpt if line.role != "root_cause" or line.fallback
    ]
    return unsettled or [line.text for line in incident.excerpt]


def group(incidents: Sequence[Incident]) -> list[list[Incident]]:
    """Incidents whose template clusters overlap by `MIN_OVERLAP` or more, linked
    transitively; most incidents first, then newest first."""
    clusters = clusters_of(grouped_lines(i) for i in incidents)
    parent = list(range(len(incidents)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(incidents)):
        for j in range(i + 1, len(incidents)):
            a, b = clusters[i], clusters[j]
            if a and b and len(a & b) / len(a | b) >= MIN_OVERLAP:
                parent[root(j)] = root(i)
    groups: dict[int, list[Incident]] = {}
    for i, incident in enumerate(incidents):
        groups.setdefault(root(i), []).append(incident)
    ordered = [sorted(g, key=lambda i: i.created_at, reverse=True) for g in groups.values()]
    return sorted(ordered, key=lambda g: (-len(g), -g[0].created_at.timestamp()))


def build_queue(store: IncidentStore, limit: int = 1000) -> list[QueueGroup]:
    """The queued incidents as groups, with the similar incidents of each."""
    queued = store.in_state([CurationState.queued], limit)
    groups = [QueueGroup(members) for members in group(queued)]
    for entry in groups:
        members = {i.id for i in entry.incidents}
        templates = [t for i in entry.incidents for t in i.templates]
        for incident, shared in store.sharing_templates(templates, members, SIMILAR):
            label = incident.label
            entry.similar.append(
                Similar(
                    incident_id=incident.id,
                    shared_lines=shared,
                    curation_state=incident.curation_state,
                    label=label.failure_class if label else None,
                    summary=incident.summary[:160],
                )
            )
    return groups
