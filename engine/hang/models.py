"""The hang report: what `denpex hang` prints and `triage_dumps` returns.

Consumes nothing; produces the pydantic models of the report. Field names and meanings are a
public contract (fields may be added, never renamed); `engine/schemas/hang.schema.json` is
generated from `HangReport`.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

HANG_SCHEMA_VERSION = "1"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CulpritKind(StrEnum):
    stalled = "stalled"
    """Entered the collective and did not finish it while peers did, or is blocked inside a
    collective of another group."""
    never_entered = "never_entered"
    """Alive (it dumped) but never called the collective its peers wait in."""
    stopped_reporting = "stopped_reporting"
    """No dump: the process died, was stopped, or its host is gone."""
    mismatched = "mismatched"
    """Called a different op, or the same op with other sizes or dtypes, at the same sequence id."""


class HangStatus(StrEnum):
    hang_found = "hang_found"
    no_hang_evidence = "no_hang_evidence"


class Scheduler(StrEnum):
    slurm = "slurm"
    kubernetes = "kubernetes"


class DumpEvidence(_Model):
    """What one or more dumps show: the fact a candidate rests on."""

    ranks: list[int]
    sources: list[str] = Field(
        description="dump files, at most a few; `more_sources` counts the rest"
    )
    more_sources: int = 0
    text: str
    process_group: str | None = None
    seq: int | None = None
    op: str | None = None
    call_site: str | None = Field(None, description="innermost stack frame outside torch")
    time: datetime | None = Field(None, description="when the entry was created (UTC)")


class SupportRecord(_Model):
    """A log record that bears on a candidate: a hardware or host record on an implicated host
    (support, not proof), or a peer's line saying how a silent rank stopped (context)."""

    signature_id: str
    failure_class: str
    category: str
    host: str | None
    gpu: str | None = Field(None, description="PCI address or GPU index the record names")
    relation: str = Field(description="how the record relates to the candidate's ranks")
    counted: bool = Field(description="false when the record is too far from the hang in time")
    reason: str
    source: str
    line: int
    time: datetime | None = None
    text: str


class Candidate(_Model):
    kind: CulpritKind
    ranks: list[int]
    hosts: list[str] = Field(
        default_factory=list, description="hosts of those ranks, only where evidence states them"
    )
    process_group: str | None
    process_group_desc: str | None = None
    seq: int | None = Field(None, description="the collective sequence id in that group")
    op: str | None = None
    since: datetime | None = Field(
        None, description="when the first rank entered the collective the others wait in (UTC)"
    )
    confidence: float = Field(ge=0.0, le=1.0)
    summary: str
    evidence: list[DumpEvidence] = Field(default_factory=list)
    support: list[SupportRecord] = Field(default_factory=list)
    caveats: list[str] = Field(default_factory=list)


class RankProgress(_Model):
    rank: int
    source: str | None = Field(None, description="the dump read for this rank; null if none")
    last_enqueued: int | None = None
    last_started: int | None = None
    last_completed: int | None = None
    waiting_in: str | None = Field(None, description="the first collective not completed")


class GroupProgress(_Model):
    name: str
    desc: str
    members: list[int]
    members_from: str = Field(description="pg_config, world, or dumps (ranks that mention it)")
    stuck_seq: int | None = Field(None, description="first sequence id some member did not finish")
    ranks: list[RankProgress]


class DumpSummary(_Model):
    source: str
    rank: int | None
    host: str | None
    format: str
    version: str
    entries: int
    captured_at: datetime | None = None
    used: bool = Field(description="false when another dump of the same rank was preferred")
    notes: list[str] = Field(default_factory=list)


class IsolationPlan(_Model):
    scheduler: Scheduler
    hosts: list[str]
    commands: list[str]
    rationale: str
    executed: bool = Field(False, description="always false: denpex prints, never runs, a plan")


class HangProvenance(_Model):
    denpex_version: str
    rules_version: str | None = None
    elapsed_ms: int


class HangReport(_Model):
    schema_version: str = HANG_SCHEMA_VERSION
    status: HangStatus
    summary: str
    candidates: list[Candidate] = Field(default_factory=list, description="ranked, best first")
    isolation_plan: IsolationPlan | None = None
    withheld_reason: str | None = Field(
        None, description="why there is no isolation plan, when there is none"
    )
    expected_ranks: list[int] = Field(default_factory=list)
    expected_ranks_from: str = ""
    missing_ranks: list[int] = Field(default_factory=list, description="expected ranks, no dump")
    incomplete: list[str] = Field(
        default_factory=list, description="what evidence is missing or could not be checked"
    )
    process_groups: list[GroupProgress] = Field(default_factory=list)
    dumps: list[DumpSummary] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list, description="files that could not be used")
    provenance: HangProvenance
