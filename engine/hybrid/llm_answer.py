"""Parses the model's reply into root causes, and keeps only what the input supports.

Consumes the reply text, the map from line ids to the excerpt lines the model was shown, and the
redactor; produces validated `RootCause`s (source `llm`, best effort) plus notes on what was
dropped. The reply must be one JSON object of the shape the prompt describes; unknown keys are
ignored, so nothing the model (or a log it read) adds can change the output schema. Each cited
line must be one the model was shown; others are dropped and counted. A cause left without
evidence is dropped. A rank or host is kept only when a cited line shows it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from denpex.errors import DenpexError
from denpex.hybrid.redact import Redactor
from denpex.hybrid.retrieval_answer import evidence_of
from denpex.models import RootCause, Source
from denpex.store.records import ExcerptLine
from denpex.taxonomy import failure_class, is_failure_class

MAX_EVIDENCE = 8
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)
_LINE_ID = re.compile(r"^\s*\[?(L\d+)\]?\b")


class AnswerError(DenpexError, ValueError):
    """The reply is not a usable answer; the message says why, for the repair request."""


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class LLMCause(_Lenient):
    failure_class: str
    confidence: float = Field(ge=0.0, le=1.0)
    title: str = Field(min_length=1, max_length=400)
    evidence: list[str] = Field(default_factory=list, max_length=32)
    originating_rank: int | None = None
    originating_host: str | None = Field(None, max_length=200)
    reasoning: str = Field("", max_length=4000)
    next_steps: list[str] = Field(default_factory=list, max_length=10)

    @field_validator("failure_class")
    @classmethod
    def _known_class(cls, value: str) -> str:
        if not is_failure_class(value):
            raise ValueError(f"{value!r} is not one of the failure classes listed")
        return value

    @field_validator("next_steps")
    @classmethod
    def _bounded_steps(cls, steps: list[str]) -> list[str]:
        return [step[:500] for step in steps if step.strip()]


class LLMAnswer(_Lenient):
    summary: str = Field(min_length=1, max_length=1000)
    root_causes: list[LLMCause] = Field(min_length=1, max_length=5)


def parse_answer(reply: str) -> LLMAnswer:
    """The reply as an `LLMAnswer`, or `AnswerError` saying precisely what is wrong."""
    text = _FENCE.sub("", reply.strip())
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise AnswerError("the reply holds no JSON object")
    try:
        raw = json.loads(text[start : end + 1])
    except json.JSONDecodeError as error:
        raise AnswerError(f"the JSON does not parse: {error}") from None
    try:
        return LLMAnswer.model_validate(raw)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'answer'}: {e['msg']}"
            for e in error.errors()[:6]
        )
        raise AnswerError(f"the JSON does not match the format: {problems}") from None


@dataclass
class Checked:
    causes: list[RootCause]
    summary: str
    notes: list[str] = field(default_factory=list)


def _cited(
    reference: str, line_ids: Mapping[str, ExcerptLine], redactor: Redactor
) -> ExcerptLine | None:
    """The shown line a citation names, by id or by quoting it; None when it names none."""
    if found := _LINE_ID.match(reference):
        return line_ids.get(found.group(1))
    quoted = redactor.restore(reference).strip().strip('"')
    if len(quoted) < 12:
        return None
    return next((line for line in line_ids.values() if quoted in line.text), None)


def check_answer(
    answer: LLMAnswer, line_ids: Mapping[str, ExcerptLine], redactor: Redactor
) -> Checked:
    """Root causes from the answer, each with evidence that exists in the input."""
    causes: list[RootCause] = []
    notes: list[str] = []
    for rank, proposed in enumerate(answer.root_causes, 1):
        lines: list[ExcerptLine] = []
        missing = 0
        for reference in proposed.evidence:
            line = _cited(reference, line_ids, redactor)
            if line is None:
                missing += 1
            elif line not in lines:
                lines.append(line)
        if missing:
            notes.append(
                f"the model cited {missing} line(s) for cause {rank} ({proposed.failure_class}) "
                "that are not in the input; they were dropped"
            )
        if not lines:
            notes.append(
                f"cause {rank} ({proposed.failure_class}) cited no line of the input and was "
                "dropped"
            )
            continue
        causes.append(_root_cause(proposed, lines[:MAX_EVIDENCE], redactor, missing, notes, rank))
    return Checked(causes=causes, summary=redactor.restore(answer.summary), notes=notes)


def _root_cause(
    proposed: LLMCause,
    lines: list[ExcerptLine],
    redactor: Redactor,
    missing: int,
    notes: list[str],
    position: int,
) -> RootCause:
    fc = failure_class(proposed.failure_class)
    rank = proposed.originating_rank
    if rank is not None and all(line.rank != rank for line in lines):
        notes.append(f"cause {position}: rank {rank} is not shown by its cited lines; dropped")
        rank = None
    host = redactor.restore(proposed.originating_host) if proposed.originating_host else None
    if host is not None and all(line.host != host and host not in line.text for line in lines):
        notes.append(f"cause {position}: host {host} is not shown by its cited lines; dropped")
        host = None
    caveat = "Best effort drafted by an LLM from the lines cited; its confidence is its own."
    if missing:
        caveat += f" It also cited {missing} line(s) that do not exist in the input."
    reasoning = redactor.restore(proposed.reasoning).strip()
    if reasoning:
        caveat += f" Its reasoning: {reasoning}"
    return RootCause(
        failure_class=fc.id,
        category=fc.category,
        signature_id=None,
        confidence=round(proposed.confidence, 3),
        source=Source.llm,
        best_effort=True,
        originating_rank=rank,
        originating_host=host,
        first_seen=min((line.time for line in lines if line.time is not None), default=None),
        title=redactor.restore(proposed.title),
        caveat=caveat,
        evidence=[evidence_of(line) for line in lines],
        next_steps=[redactor.restore(step) for step in proposed.next_steps],
        owner=fc.owner,
    )
