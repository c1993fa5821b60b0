"""Plain records that go into the incident store and come out of it.

Consumes nothing; produces the pydantic models the hybrid path hands to the store (a draft of
an incident) and the store hands back (an incident, a queue entry, a label). Nothing here knows
about SQL.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from denpex.models import Diagnosis, InputSummary


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class InputDigest(_Record):
    """One input as read: where it came from, what it was, and the SHA-256 of its bytes."""

    source: str
    kind: str
    bytes: int
    lines: int
    sha256: str | None = Field(None, description="null when the input could not be re-read")


def input_digests(inputs: Sequence[InputSummary], sha256: Mapping[str, str]) -> list[InputDigest]:
    """The inputs a diagnosis read, each with the digest of its bytes when it was re-read."""
    return [
        InputDigest(
            source=i.source, kind=i.kind, bytes=i.bytes, lines=i.lines, sha256=sha256.get(i.source)
        )
        for i in inputs
    ]


class ExcerptLine(_Record):
    """One line of the causal-timeline excerpt, in corrected time order."""

    source: str
    line: int
    rank: int | None = None
    host: str | None = None
    time: datetime | None = None
    time_inferred: bool = False
    text: str
    template: str = Field(description="the line with its variable parts masked")
    signature_id: str | None = Field(None, description="the rule that matched it, if any")
    role: str = Field(description="root_cause, symptom or context for rule matches; else abnormal")
    fallback: bool = Field(
        False,
        description="the rule is a generic fallback (any uncaught exception): it names the line, "
        "not its cause, so curation still mines it",
    )
    repeats: int = Field(1, ge=1, description="lines with the same template folded into this one")


class IncidentDraft(_Record):
    """What the hybrid path knows about one diagnosis, before the store gives it an id."""

    diagnosis: Diagnosis
    inputs: list[InputDigest]
    excerpt: list[ExcerptLine]
    templates: list[str] = Field(description="distinct masked lines, first abnormal first")
    embedder: str | None = None
    queue: bool = Field(description="true when the diagnosis waits for a curator")
    tenant: str | None = Field(None, description="the API tenant that asked; null for the CLI")


class LabelSource(StrEnum):
    curator = "curator"
    rules = "rules"


class Label(_Record):
    """The cause an incident is known to have, and who settled it."""

    failure_class: str
    source: LabelSource


class Incident(_Record):
    id: str
    created_at: datetime
    status: str
    summary: str
    failure_class: str | None
    answer_source: str | None
    confidence: float | None
    input_digest: str
    inputs: list[InputDigest]
    excerpt: list[ExcerptLine]
    templates: list[str]
    diagnosis: Diagnosis
    denpex_version: str
    rules_version: str
    llm_model: str | None
    embedder: str | None
    elapsed_ms: int
    curation_state: str
    confirmed_class: str | None = None
    confirmed_by: str | None = None
    confirmed_at: datetime | None = None
    confirmed_note: str | None = None
    curation_note: str | None = None
    settled_by: str | None = None
    tenant: str | None = None

    @property
    def label(self) -> Label | None:
        return label_of(self.confirmed_class, self.status, self.failure_class)


class IncidentSummary(_Record):
    """One row of `denpex curate list`."""

    id: str
    created_at: datetime
    status: str
    failure_class: str | None
    confidence: float | None
    curation_state: str
    confirmed_class: str | None
    summary: str


def label_of(confirmed_class: str | None, status: str, failure_class: str | None) -> Label | None:
    """A curator's word first; else a confident rules answer; else nothing is known."""
    if confirmed_class is not None:
        return Label(failure_class=confirmed_class, source=LabelSource.curator)
    if status == "confident" and failure_class is not None:
        return Label(failure_class=failure_class, source=LabelSource.rules)
    return None
