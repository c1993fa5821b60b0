"""The schema of one signature file in `rules/<family>/<name>.yaml`.

Consumes the parsed YAML of one file; produces a validated, immutable `Signature`. Semantic
checks that need the whole library or a compiler (unique ids, both backends compile, examples)
live in `library.py` and `lint.py`.
"""

from __future__ import annotations

import re
from enum import StrEnum
from functools import cached_property
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from denpex.taxonomy import Category, Owner, Traits, classes, traits


class Role(StrEnum):
    root_cause = "root_cause"
    symptom = "symptom"
    context = "context"


class Maturity(StrEnum):
    experimental = "experimental"
    test = "test"
    stable = "stable"
    deprecated = "deprecated"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


NEARBY_MAX_LINES = 20


class NearbyPattern(_Strict):
    """A pattern tried on the few lines before or after a match, to add captures that a record
    spreads over several lines (the torchelastic failure summary prints rank, host and exit code
    on lines of their own). It adds captures; it never decides whether the signature matches."""

    regex: str
    within: int = Field(3, ge=1, le=NEARBY_MAX_LINES)
    direction: Literal["after", "before"] = "after"


class ClockAnchor(_Strict):
    """Marks matches that happen at (nearly) the same moment on every rank of a synchronous job,
    so the timeline can estimate each host's clock offset from them."""

    key: str = Field(
        description="template over captures; equal keys on different hosts are simultaneous"
    )
    minus_ms: str | None = Field(
        None, description="capture holding milliseconds to subtract (a timeout's elapsed time)"
    )


class Pattern(_Strict):
    regex: str
    caseless: bool = False
    keywords: list[str] = Field(
        default_factory=list,
        description="literals of which every match contains at least one; derived when absent",
    )
    nearby: list[NearbyPattern] = Field(default_factory=list)

    @field_validator("regex")
    @classmethod
    def _compiles_in_python(cls, regex: str) -> str:
        try:
            re.compile(regex)
        except re.error as error:
            raise ValueError(f"regex does not compile: {error}") from None
        return regex


class MatchExample(_Strict):
    line: str
    captures: dict[str, str] = Field(default_factory=dict)
    rendered: bool = Field(
        False,
        description="rendered from the emitter's format string; a line copied from a real log "
        "has no flag",
    )
    source: str | None = Field(
        None,
        description="for a line copied from a real log: the public thread it was copied from",
    )


class Agreement(_Strict):
    """What every process of a job prints alike (the network NCCL chose, the NCCL version, the
    arguments of the collective at one opCount): when processes print different values, the
    signature's class is what the difference means (`denpex.reason.agreement`)."""

    values: list[str] = Field(min_length=1, description="captures that must agree")
    key: list[str] = Field(
        default_factory=list,
        description="captures naming the same event in every process (an opCount); none: the "
        "line states something once per process",
    )
    distinct: bool = Field(
        False,
        description="the values must instead differ between processes (the global rank each "
        "process claims, once per process): the finding is a value claimed twice while others "
        "of the job go unclaimed",
    )
    size: str | None = Field(
        None,
        description="with distinct: the capture stating how many values the job has (its world "
        "size), which the claims must cover",
    )


class SourceRef(_Strict):
    """Where a generated signature's message is printed, in the newest release that prints it."""

    file: str
    line: int = Field(ge=1)
    format: str = Field(description="the format string exactly as in the source")


UNCLEAR_PRIOR = 0.35
"""A prior at or below this says the class is unclear: the match may feed a best effort but
does not settle a diagnosis."""

GENERIC_MAX_PRIORITY = 10
"""Hand-written generic fallbacks (any uncaught exception) have priority <= 10: on a line an
emitter's own catalogued message also matches, the specific catalog message fires."""
CATALOG_PRIORITY_RANGE = range(GENERIC_MAX_PRIORITY + 1, 30)
"""Catalog signatures sit between the generic fallbacks and every specific hand-written one."""
HAND_WRITTEN_MIN_PRIORITY = 30
"""Specific hand-written signatures have priority >= 30: on a line a catalog signature also
matches, the hand-written one fires."""


def _as_example(value: Any) -> Any:
    return {"line": value} if isinstance(value, str) else value


class Examples(_Strict):
    match: list[MatchExample] = Field(min_length=1)
    no_match: list[str] = Field(min_length=1)

    @field_validator("match", mode="before")
    @classmethod
    def _strings_are_lines(cls, value: Any) -> Any:
        return [_as_example(item) for item in value] if isinstance(value, list) else value


class Signature(_Strict):
    """One failure signature. Captures named `rank`, `local_rank`, `host` and `pid` say whom a
    line is about and take precedence over the launcher prefix of the line that printed it."""

    id: str = Field(pattern=r"^[a-z0-9_]+\.[a-z0-9_]+$")
    title: str = Field(min_length=3)
    status: Maturity = Maturity.stable
    failure_class: str | None = Field(
        None, description="required for root_cause and symptom; context lines name no failure"
    )
    category: Category | None = None
    role: Role
    confidence: float = Field(ge=0.0, le=1.0, description="prior probability a match means this")
    priority: int = Field(
        50, ge=0, le=100, description="on a line several signatures match, the highest wins"
    )
    patterns: list[Pattern] = Field(min_length=1)
    meaning: str = Field(min_length=3)
    caveat: str = Field(min_length=3, description="what a match does not prove")
    next_steps: list[str] = Field(default_factory=list)
    owner: Owner
    references: list[str] = Field(min_length=1)
    examples: Examples
    clock_anchor: ClockAnchor | None = None
    origin: Literal["catalog"] | None = Field(
        None, description="catalog: generated from the emitter's source; absent: hand-written"
    )
    emitter: str | None = Field(None, description="the program that prints the message")
    releases: str | None = Field(
        None, description='release lines that print it, e.g. ">=2.18,<=2.27" or "==2.21"'
    )
    source: SourceRef | None = None
    agreement: Agreement | None = Field(
        None, description="a context line whose values every process must print alike"
    )
    locates_origin: bool | None = Field(
        None,
        description="false when the rank that prints the line is not where the failure began "
        "(a rank left waiting for a group that never formed); the origin is then undetermined. "
        "Absent: the class's default in taxonomy.yaml",
    )
    job_wide: bool | None = Field(
        None,
        description="false when the line names the rank a fault of a job-wide class began on "
        "(true for a fault of another class that every rank meets alike); absent: the class's "
        "default in taxonomy.yaml",
    )
    executed_alike: bool | None = Field(
        None,
        description="false when the line reports a check of this rank's own state that other "
        "ranks do not share (a NaN in its local gradients before the data-parallel all-reduce), "
        "so the one rank whose output is at hand is named even for a class every rank runs "
        "alike; absent: the class's default in taxonomy.yaml",
    )

    stage: (
        Literal[
            "joining",
            "joined",
            "connecting",
            "retrying",
            "training",
            "finished",
            "building",
            "built",
            "starting",
            "serving",
        ]
        | None
    ) = Field(
        None,
        description="for a context line: the stage of a run's start it announces ('joining': "
        "a process is joining the process group; 'joined': the group formed; 'connecting': NCCL "
        "created a communicator, its first collective next; 'retrying': a process retries "
        "connecting to a peer that refuses or does not answer; 'training': the "
        "training loop begins; 'building': an extension is built or loaded just in time; "
        "'built': it loaded; 'starting': an inference engine is starting; 'serving': it is "
        "ready or serving). A log whose last word is such an announcement, with no step "
        "after, stopped there. 'finished': the training loop ended; a collective that times "
        "out after it was issued by code not every rank runs (denpex/reason/after_the_loop.py)",
    )

    claims_line: bool = Field(
        False,
        description="for a context line: a message known to be harmless; on its line, "
        "signatures of lower priority that would read it as a failure are dropped",
    )

    @cached_property
    def traits(self) -> Traits:
        """The class's traits (taxonomy.yaml), with what this signature states in their place."""
        return traits(self.failure_class).overridden(
            locates_origin=self.locates_origin,
            job_wide=self.job_wide,
            executed_alike=self.executed_alike,
        )

    @property
    def family(self) -> str:
        return self.id.split(".", 1)[0]

    @property
    def generated(self) -> bool:
        return self.origin == "catalog"

    @property
    def fallback(self) -> bool:
        """A generic fallback (any uncaught exception, a bare traceback): it speaks only when
        nothing more specific does."""
        return not self.generated and self.priority <= GENERIC_MAX_PRIORITY

    @property
    def tentative(self) -> bool:
        """Generated from an emitter's source with an unclear class: it never outranks a
        hand-written signature's finding."""
        return self.generated and self.confidence <= UNCLEAR_PRIOR

    @field_validator("failure_class")
    @classmethod
    def _in_taxonomy(cls, value: str | None) -> str | None:
        if value is not None and value not in classes():
            raise ValueError(f"{value!r} is not a failure class in the taxonomy")
        return value

    @model_validator(mode="after")
    def _origin_fields(self) -> Signature:
        if self.origin == "catalog":
            if self.emitter is None or self.source is None:
                raise ValueError("a catalog signature names its emitter and source")
            if self.priority not in CATALOG_PRIORITY_RANGE:
                raise ValueError(
                    "a catalog signature's priority lies between the generic fallbacks "
                    f"(<= {GENERIC_MAX_PRIORITY}) and specific hand-written ones "
                    f"(>= {HAND_WRITTEN_MIN_PRIORITY})"
                )
        elif self.priority in CATALOG_PRIORITY_RANGE:
            raise ValueError(
                f"a hand-written signature's priority is {HAND_WRITTEN_MIN_PRIORITY} or more, or "
                f"{GENERIC_MAX_PRIORITY} or less for a generic fallback"
            )
        return self

    @model_validator(mode="after")
    def _agreement_is_read_from_captures(self) -> Signature:
        if self.agreement is None:
            return self
        if self.role is not Role.context or self.failure_class is None:
            raise ValueError("an agreement is a context line with the class a difference means")
        named = set().union(*(re.compile(p.regex).groupindex for p in self.patterns))
        if self.agreement.distinct and self.agreement.size is None:
            raise ValueError("a distinct agreement names the capture of the job's size")
        size = [self.agreement.size] if self.agreement.size else []
        missing = {*self.agreement.values, *self.agreement.key, *size} - named
        if missing:
            raise ValueError(f"agreement names captures no pattern has: {sorted(missing)}")
        return self

    @model_validator(mode="after")
    def _stage_is_context(self) -> Signature:
        if self.stage is not None and self.role is not Role.context:
            raise ValueError("a stage is announced by a context line")
        if self.claims_line and self.role is not Role.context:
            raise ValueError("a line is claimed as harmless by a context line")
        return self

    @model_validator(mode="after")
    def _category_matches_class(self) -> Signature:
        if self.failure_class is None or self.category is None:
            if self.role is not Role.context:
                raise ValueError(
                    "a root_cause or symptom signature needs failure_class and category"
                )
            if self.failure_class != self.category:  # one given without the other
                raise ValueError("give failure_class and category together, or neither")
            return self
        expected = classes()[self.failure_class].category
        if self.category != expected:
            raise ValueError(
                f"category {self.category} does not match {self.failure_class} ({expected})"
            )
        if self.role is not Role.context and not self.next_steps:
            raise ValueError("a root_cause or symptom signature needs next_steps")
        return self
