"""The diagnosis: the JSON contract every consumer reads (docs/output-contract.md).

Consumes nothing; produces the pydantic models that `reason` and `gate` fill and `render`
prints. Field names and meanings are a public contract: fields may be added, never renamed.
`denpex schema` publishes the JSON Schema generated from `Diagnosis`.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from denpex.hang.models import DumpEvidence, HangReport
from denpex.taxonomy import Category, Owner

SCHEMA_VERSION = "1"


class Status(StrEnum):
    confident = "confident"
    best_effort = "best_effort"
    unknown = "unknown"
    no_failure = "no_failure"


class Source(StrEnum):
    rules = "rules"
    retrieval = "retrieval"
    llm = "llm"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Evidence(_Model):
    """One line of input that supports a claim, with where and when it was printed."""

    source: str = Field(description="input path as given, archive members as archive!member")
    line: int = Field(ge=1, description="1-based line number in that source")
    rank: int | None = None
    host: str | None = None
    time: datetime | None = Field(None, description="corrected time, UTC")
    time_inferred: bool = Field(
        False, description="true when the line had no timestamp and took a neighbour's"
    )
    text: str = Field(description="the raw line")
    signature_id: str | None = None
    context: list[str] = Field(
        default_factory=list,
        description="lines that belong to the same event, e.g. the traceback above it",
    )


class RankBasis(StrEnum):
    """How the evidence states the originating rank."""

    line = "line"
    """The evidence line names it ("[Rank 3] ...", "rank : 3 (local_rank: 1)")."""
    prefix = "prefix"
    """A prefix on the line names it (PyTorch's `[rank3]:`, torchrun's `[default3]:`, srun's)."""
    file_name = "file_name"
    """The input's path names it (`rank3.log`, torchrun's `attempt_0/3/`)."""
    launcher = "launcher"
    """A launcher, kernel or scheduler line about a pid or local rank, joined to the rank."""
    inferred = "inferred"
    """No line names it: reasoned from several ranks' evidence (`mechanism` says how)."""


class RankFinding(_Model):
    """How the originating rank was found, or why it was not."""

    mechanism: str = Field(
        description="stated (a line, prefix or file names it), flight_recorder, odd_one_out, "
        "absent_from_symptoms, silent_end, died_before_reports, pid_join, launcher_report, "
        "single_process, first_divergence, seq_behind, undetermined"
    )
    basis: RankBasis | None = Field(None, description="how the evidence states the rank")
    evidence: str = Field("", description="what the finding rests on, in one sentence")
    caveat: str = Field("", description="what the finding does not prove")


class Explains(_Model):
    """The cascade a root cause accounts for, aggregated rather than listed."""

    events: int = 0
    ranks: list[int] = Field(default_factory=list)
    hosts: list[str] = Field(default_factory=list)
    signature_ids: list[str] = Field(default_factory=list)


class RootCause(_Model):
    failure_class: str
    category: Category
    signature_id: str | None
    confidence: float = Field(ge=0.0, le=1.0)
    source: Source
    best_effort: bool
    originating_rank: int | None = Field(
        None, description="the rank where the cause began, when the evidence names exactly one"
    )
    originating_ranks: list[int] = Field(
        default_factory=list,
        description=(
            "every rank the evidence names as where the cause began (two ranks that withheld a "
            "collective, independent faults on several ranks); [originating_rank] when one"
        ),
    )
    originating_host: str | None = None
    originating_local_rank: int | None = None
    first_seen: datetime | None = None
    title: str = ""
    caveat: str = ""
    evidence: list[Evidence] = Field(default_factory=list)
    explains: Explains = Field(default_factory=Explains)
    next_steps: list[str] = Field(default_factory=list)
    owner: Owner
    dump_evidence: list[DumpEvidence] = Field(
        default_factory=list,
        description="Flight Recorder facts the cause rests on (signature_id flight_recorder.*)",
    )
    rank_finding: RankFinding | None = Field(
        None, description="how originating_rank was found, or why no rank was named"
    )
    candidate_ranks: list[int] = Field(
        default_factory=list,
        description="when originating_rank is null: the ranks that remain possible",
    )
    candidate_reason: str = Field(
        "", description="why candidate_ranks remain and what would tell them apart"
    )

    @model_validator(mode="before")
    @classmethod
    def _one_rank_is_a_list_of_one(cls, data: Any) -> Any:
        """Whoever names one originating rank names the list too: readers of either agree."""
        if (
            isinstance(data, dict)
            and data.get("originating_rank") is not None
            and not data.get("originating_ranks")
        ):
            return {**data, "originating_ranks": [data["originating_rank"]]}
        return data


class SilentFinding(_Model):
    """A failure that raised no error, read from the training signal (progress lines, probe)."""

    failure_class: str = Field(
        description="straggler, nan_or_inf, loss_divergence, loss_scale_underflow, "
        "silent_data_corruption, or for a run that stopped at its start launch_config_error "
        "(ranks joining, peers silent), rendezvous_failure (connection retries), "
        "collective_timeout (a first collective) or dependency_error (an extension build)"
    )
    title: str
    detector: str = Field(description="the check that found it, e.g. stragglers.step_time")
    step: int | None = Field(None, description="the step where it began")
    ranks: list[int] = Field(default_factory=list, description="where it began")
    hosts: list[str] = Field(default_factory=list)
    layer: str | None = Field(None, description="first layer it appeared in (probe)")
    confidence: float = Field(ge=0.0, le=1.0)
    suspicion: bool = Field(False, description="true when the evidence cannot make it certain")
    caveat: str = ""
    measurements: dict[str, float] = Field(default_factory=dict)
    evidence: list[Evidence] = Field(default_factory=list)


class FirstAbnormal(_Model):
    rank: int | None
    host: str | None = None
    time: datetime | None
    signature_id: str


class ClockOffset(_Model):
    offset_s: float
    uncertainty_s: float
    anchors: int


class Timeline(_Model):
    ranks_seen: int = 0
    hosts_seen: int = 0
    clock_offsets_s: dict[str, float] = Field(default_factory=dict)
    clock_estimates: dict[str, ClockOffset] = Field(
        default_factory=dict, description="per host: offset, its uncertainty and anchor count"
    )
    reordered_events: int = Field(
        0, description="abnormal events whose cross-host order the clock correction changed"
    )
    first_abnormal: list[FirstAbnormal] = Field(default_factory=list)


class InputSummary(_Model):
    source: str
    kind: str
    bytes: int
    lines: int


class Provenance(_Model):
    denpex_version: str
    rules_version: str
    model: str | None = None
    elapsed_ms: int


class Diagnosis(_Model):
    schema_version: str = SCHEMA_VERSION
    status: Status
    summary: str
    root_causes: list[RootCause] = Field(default_factory=list)
    timeline: Timeline = Field(default_factory=Timeline)
    inputs: list[InputSummary] = Field(default_factory=list)
    provenance: Provenance
    warnings: list[str] = Field(
        default_factory=list, description="inputs skipped or read partially, and why"
    )
    curation_id: str | None = Field(
        None, description="where a best-effort diagnosis waits for a curator"
    )
    hang: HangReport | None = Field(
        None, description="hang triage of the Flight Recorder dumps among the inputs, if any"
    )
    silent: list[SilentFinding] = Field(
        default_factory=list,
        description="stragglers, numerical events and replica divergence the progress shows",
    )
