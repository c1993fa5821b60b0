"""The reviewed mapping (catalogs/<emitter>/mapping.yaml): message -> disposition and class.

Consumes the mapping file; produces a `Mapping` whose `decide(message)` applies the rules in
order (the first whose conditions all hold wins) and falls back to the `default`. Every message
gets a `Decision`: `mapped` (class, role, prior, caveat, next steps), `context`, or `excluded`
with its written reason. Nothing is dropped without one.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from catalogs.core.message import Message
from denpex.signatures.signature import UNCLEAR_PRIOR, Role
from denpex.taxonomy import Owner, class_next_steps, classes

Disposition = Literal["mapped", "context", "excluded"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Outcome(_Strict):
    class_: str | None = Field(None, alias="class")
    role: Role | None = None
    confidence: float | None = Field(None, ge=0.0, le=1.0)
    caveat: str | None = None
    next_steps: list[str] = Field(default_factory=list)
    owner: Owner | None = None
    meaning: str | None = None

    @field_validator("class_")
    @classmethod
    def _in_taxonomy(cls, value: str | None) -> str | None:
        if value is not None and value not in classes():
            raise ValueError(f"{value!r} is not a failure class in engine/taxonomy.yaml")
        return value


class MappingRule(_Outcome):
    when: str = Field(description="Python regex searched in the message's format text")
    level: str | None = Field(None, description="regex the message's level must match")
    file: str | None = Field(None, description="regex the message's source file must match")
    disposition: Disposition = "mapped"
    reason: str | None = None

    @field_validator("when", "level", "file")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as error:
                raise ValueError(f"{value!r} does not compile: {error}") from None
        return value

    @model_validator(mode="after")
    def _complete(self) -> MappingRule:
        if self.disposition == "mapped":
            if self.class_ is None or self.role is None or self.confidence is None:
                raise ValueError(f"rule {self.when!r}: a mapped rule needs class, role, confidence")
        elif self.disposition == "excluded" and not self.reason:
            raise ValueError(f"rule {self.when!r}: an exclusion needs a written reason")
        return self


class DefaultOutcome(_Outcome):
    class_: str = Field(alias="class")
    role: Role = Role.symptom
    confidence: float = Field(0.25, ge=0.0, le=1.0)


class RealLine(_Strict):
    line: str = Field(description="a line copied verbatim from a real log")
    source: str = Field(description="the public thread it was copied from (a URL)")


class Mapping(_Strict):
    emitter: str
    family: str = Field(pattern=r"^[a-z0-9_]+_cat$")
    owner_default: Owner
    references: list[str] = Field(min_length=1)
    display: str | None = Field(None, description="how titles name the emitter, e.g. NCCL")
    rules: list[MappingRule] = Field(default_factory=list)
    default: DefaultOutcome
    real_lines: list[RealLine] = Field(
        default_factory=list,
        description="real lines of the emitter: each becomes a match example (with its source) "
        "of every generated signature that matches it",
    )

    @model_validator(mode="after")
    def _steps_for_failures(self) -> Mapping:
        for outcome in [*self.rules, self.default]:
            if getattr(outcome, "disposition", "mapped") != "mapped":
                continue
            needs_steps = outcome.role is not Role.context and not outcome.next_steps
            if needs_steps and not class_next_steps(outcome.class_ or ""):
                where = getattr(outcome, "when", "default")
                raise ValueError(f"rule {where!r}: a root_cause or symptom needs next_steps")
        return self

    def decide(self, message: Message) -> Decision:
        for index, rule in enumerate(self.rules):
            if not re.search(rule.when, message.text):
                continue
            if rule.level is not None and not re.search(rule.level, message.level):
                continue
            if rule.file is not None and not re.search(rule.file, message.file):
                continue
            return self._decision(rule, f"rule {index}: {rule.when}")
        return self._decision(self.default, "default")

    def _decision(self, outcome: _Outcome, source: str) -> Decision:
        disposition: Disposition = getattr(outcome, "disposition", "mapped")
        if disposition != "mapped":
            return Decision(
                disposition=disposition,
                rule=source,
                reason=getattr(outcome, "reason", None) or "informational: kept as context",
            )
        assert outcome.class_ is not None and outcome.role is not None
        assert outcome.confidence is not None
        steps = list(outcome.next_steps) or list(class_next_steps(outcome.class_))
        return Decision(
            disposition="mapped",
            rule=source,
            failure_class=outcome.class_,
            role=outcome.role,
            confidence=outcome.confidence,
            caveat=outcome.caveat or _default_caveat(outcome.confidence),
            next_steps=tuple(steps),
            owner=outcome.owner or self.owner_default,
            meaning=outcome.meaning,
        )


class Decision(BaseModel):
    model_config = ConfigDict(frozen=True)

    disposition: Disposition
    rule: str
    reason: str | None = None
    failure_class: str | None = None
    role: Role | None = None
    confidence: float | None = None
    caveat: str | None = None
    next_steps: tuple[str, ...] = ()
    owner: Owner | None = None
    meaning: str | None = None


def _default_caveat(confidence: float) -> str:
    if confidence <= UNCLEAR_PRIOR:
        return (
            "Generated from the emitter's source with an unclear class: the line shows that "
            "this code path failed, not why; it can support a diagnosis, not settle one."
        )
    return "Generated from the emitter's source: the line says what failed, not what caused it."


def load_mapping(path: Path) -> Mapping:
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise ValueError(f"{path}: cannot read the mapping: {error}") from None
    try:
        return Mapping.model_validate(raw)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in error.errors()
        )
        raise ValueError(f"{path}: {problems}") from None
