"""Renders the LLM prompt from the jinja2 templates in `prompts/`, within a token budget.

Consumes the excerpt, the rules' unconfident candidates, the similar incidents, a token counter
and a budget; produces the chat messages (redacted), the map from line ids to excerpt lines the
answer is checked against, and what had to be left out. When the whole does not fit, similar
incidents lose their example lines first, then lines are cut shorter, then fewer incidents and
fewer log lines are shown; root causes and rule matches are the last lines to go.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from typing import Any

from denpex.errors import DenpexError
from denpex.hybrid.excerpt import prioritised
from denpex.hybrid.redact import Redactor
from denpex.hybrid.tokens import TokenCounter
from denpex.models import RootCause
from denpex.retrieval.similar import Neighbour
from denpex.store.records import ExcerptLine, Incident
from denpex.taxonomy import classes

MAX_CAUSES = 3
_CONTROL = {c: " " for c in range(32) if c not in (9,)}


class PromptTooLarge(DenpexError):
    """Even the smallest prompt does not fit the model's context."""


@dataclass(frozen=True)
class PromptMaterial:
    excerpt: Sequence[ExcerptLine]
    rules_causes: Sequence[RootCause]
    neighbours: Sequence[Neighbour]
    incidents: dict[str, Incident]


@dataclass(frozen=True)
class _Shape:
    lines: int
    line_chars: int
    neighbours: int
    pairs: int


@dataclass(frozen=True)
class Prompt:
    messages: list[dict[str, str]]
    line_ids: dict[str, ExcerptLine]
    tokens: int
    lines_left_out: int
    neighbours_left_out: int
    nonce: str


@cache
def _environment() -> Any:
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resources.files("denpex.prompts"))),
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # plain text for a model, not HTML
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render(name: str, **values: Any) -> str:
    return _environment().get_template(name).render(**values)


def _clean(text: str, limit: int, nonce: str) -> str:
    """One physical line, bounded, that cannot forge the data markers."""
    text = text.translate(_CONTROL).replace(nonce, "")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _render(material: PromptMaterial, shape: _Shape, nonce: str) -> tuple[str, dict[str, Any]]:
    chosen = prioritised(material.excerpt, shape.lines)
    ids = {index: f"L{index + 1}" for index in chosen}
    lines = [
        {
            "id": ids[index],
            "time": line.time.isoformat(timespec="milliseconds") if line.time else None,
            "rank": line.rank,
            "host": line.host,
            "where": f"{line.source}:{line.line}",
            "matched": line.signature_id or "generic pattern",
            "repeats": line.repeats,
            "text": _clean(line.text, shape.line_chars, nonce),
        }
        for index, line in ((i, material.excerpt[i]) for i in chosen)
    ]
    by_text = {
        (line.source, line.line): ids[i] for i, line in enumerate(material.excerpt) if i in ids
    }
    rules = [
        {
            "failure_class": cause.failure_class,
            "confidence": cause.confidence,
            "signature_id": cause.signature_id,
            "rank": cause.originating_rank,
            "title": _clean(cause.title, shape.line_chars, nonce),
            "lines": [
                by_text[(e.source, e.line)] for e in cause.evidence if (e.source, e.line) in by_text
            ],
        }
        for cause in material.rules_causes
    ]
    similar = [
        {
            "id": neighbour.incident_id[:12],
            "similarity": neighbour.similarity,
            "failure_class": neighbour.label.failure_class,
            "label_source": f"settled by {neighbour.label.source.value}",
            "summary": _clean(
                material.incidents[neighbour.incident_id].summary
                if neighbour.incident_id in material.incidents
                else "",
                shape.line_chars,
                nonce,
            ),
            "pairs": [
                {
                    "stored": _clean(pair.stored, shape.line_chars, nonce),
                    "query": _clean(pair.query, shape.line_chars, nonce),
                    "similarity": pair.similarity,
                }
                for pair in neighbour.pairs[: shape.pairs]
            ],
        }
        for neighbour in material.neighbours[: shape.neighbours]
    ]
    user = render(
        "user.j2",
        nonce=nonce,
        lines=lines,
        lines_left_out=len(material.excerpt) - len(lines),
        rules=rules,
        similar=similar,
        max_causes=MAX_CAUSES,
    )
    return user, {ids[i]: material.excerpt[i] for i in chosen}


def _smaller(shape: _Shape) -> _Shape | None:
    if shape.pairs > 1:
        return replace(shape, pairs=shape.pairs // 2)
    if shape.line_chars > 200:
        return replace(shape, line_chars=shape.line_chars // 2)
    if shape.neighbours > 1:
        return replace(shape, neighbours=shape.neighbours // 2)
    if shape.lines > 4:
        return replace(shape, lines=shape.lines // 2)
    if shape.neighbours:
        return replace(shape, neighbours=0)
    if shape.lines > 1:
        return replace(shape, lines=shape.lines - 1)
    return None


def build_prompt(
    material: PromptMaterial, counter: TokenCounter, budget: int, redactor: Redactor
) -> Prompt:
    """The largest rendering of `material` whose messages fit in `budget` tokens."""
    nonce = secrets.token_hex(6)
    system = render(
        "system.j2",
        nonce=nonce,
        classes=[
            {"id": fc.id, "category": fc.category.value, "meaning": fc.meaning}
            for fc in classes().values()
        ],
    )
    shape: _Shape | None = _Shape(
        lines=len(material.excerpt), line_chars=800, neighbours=len(material.neighbours), pairs=4
    )
    while shape is not None:
        user, line_ids = _render(material, shape, nonce)
        messages = [
            {"role": "system", "content": system},
            {"role": "user", "content": redactor.redact(user)},
        ]
        tokens = counter.count_messages(messages)
        if tokens <= budget:
            return Prompt(
                messages=messages,
                line_ids=line_ids,
                tokens=tokens,
                lines_left_out=len(material.excerpt) - len(line_ids),
                neighbours_left_out=len(material.neighbours) - shape.neighbours,
                nonce=nonce,
            )
        shape = _smaller(shape)
    raise PromptTooLarge(f"the smallest prompt does not fit in {budget} tokens")
