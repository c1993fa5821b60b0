"""Trainer progress formats, read from formats.yaml beside this module, and the line parser.

Consumes a message (a log line after its launcher prefixes); produces a `Point`: the step and
the values the line states (loss, grad norm, learning rate, loss scale, throughput, step time,
...), or None when no format recognises the line. `parse_message` is a pure function: it reads
no state and no clock, so any scan can call it on the lines it already holds.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

import yaml
from pydantic import BaseModel, ConfigDict, Field

from denpex.ingest.numbers import MAX_DIGITS, identifier

NUMBER = r"[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|NaN|NAN|inf|Inf|INF)"
FIELDS = frozenset(
    {
        "rank",
        "loss",
        "grad_norm",
        "lr",
        "loss_scale",
        "attempted_scale",
        "param_norm",
        "throughput",
        "step_time",
        "compute_time",
        "skipped",
        "nan_count",
        "overflow",
    }
)


class FormatSpec(BaseModel):
    """One trainer's progress line as formats.yaml states it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    trainer: str
    emitted_by: str
    line: str
    keywords: list[str] = Field(min_length=1)
    fields: dict[str, str] = Field(default_factory=dict)
    pairs: dict[str, list[str]] = Field(default_factory=dict)
    scale: dict[str, float] = Field(default_factory=dict)
    set: dict[str, float] = Field(default_factory=dict)
    requires: list[str] = Field(default_factory=list)
    examples: list[dict] = Field(default_factory=list)
    near_misses: list[str] = Field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Format:
    spec: FormatSpec
    line: re.Pattern[str]
    fields: tuple[tuple[str, re.Pattern[str]], ...]
    pairs: dict[str, str]
    """Printed name (normalised) -> field."""
    keywords: re.Pattern[str]
    """Any of the spec's keywords, as one regex: tried on every progress candidate line, where
    a Python loop over the keywords cost more than the format's own regexes."""


# A name (words joined by spaces, underscores, hyphens or slashes), then `:` or `=` or a space,
# then a number, then an optional unit `s` (seconds).
_PAIR = re.compile(
    r"(?<![\w.])(?P<key>[A-Za-z][\w/]*(?:[ -][A-Za-z][\w/]*)?)\s*[:=]?\s*"
    r"(?P<v>" + NUMBER + r")(?:s\b)?(?![\w.])"
)


def _key(name: str) -> str:
    return name.lower().replace(" ", "_").replace("-", "_")


@dataclass(frozen=True, slots=True)
class Point:
    """What one progress line states. `step` is None when the trainer does not print it."""

    format_id: str
    step: int | None
    values: dict[str, float]
    rank: int | None = None
    layer: str | None = None
    """The layer a probe line is about (`denpex.probe`)."""
    checksum: str | None = None

    def get(self, name: str) -> float | None:
        return self.values.get(name)


def _expand(regex: str) -> str:
    return regex.replace("{num}", NUMBER)


@cache
def formats() -> tuple[Format, ...]:
    """Every format of formats.yaml, compiled, in file order."""
    text = resources.files("denpex.progress").joinpath("formats.yaml").read_text("utf-8")
    loaded = []
    # libyaml's loader when present: the pure-Python one costs a start-up tens of milliseconds.
    for raw in yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))["formats"]:
        spec = FormatSpec.model_validate(raw)
        named = set(spec.fields) | set(spec.pairs) | set(spec.set) | set(spec.requires)
        unknown = named - FIELDS
        if unknown:
            raise ValueError(f"progress format {spec.id}: unknown field(s) {sorted(unknown)}")
        loaded.append(
            Format(
                spec=spec,
                line=re.compile(_expand(spec.line)),
                fields=tuple((name, re.compile(_expand(rx))) for name, rx in spec.fields.items()),
                pairs={_key(n): field for field, names in spec.pairs.items() for n in names},
                keywords=re.compile("|".join(map(re.escape, spec.keywords))),
            )
        )
    return tuple(loaded)


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def _counter(value: float | None) -> int | None:
    """A step or rank read as a number: whole, finite and no larger than a real job prints."""
    if value is None or not math.isfinite(value) or abs(value) >= 10**MAX_DIGITS:
        return None
    return int(value)


def _step(found: re.Match[str]) -> int | None:
    groups = found.groupdict()
    if groups.get("step") is not None:
        return _counter(_number(groups["step"]))
    parts = [identifier(groups.get(name)) for name in ("epoch", "batches", "batch")]
    if None not in parts:
        epoch, batches, batch = parts
        return _counter(float(epoch * batches + batch))  # type: ignore[operator]
    return None


PROBE_KEY = "denpex_probe"
"""The key that opens every JSON line `denpex.probe` writes."""
PROBE_VALUES = ("delta_norm", "norm")


def parse_probe(message: str) -> Point | None:
    """A `denpex.probe` line: {"denpex_probe": 1, "step", "rank", "layer", "delta_norm",
    "norm", "checksum"}; None when the line is not one or is malformed."""
    start = message.find('{"' + PROBE_KEY + '"')
    if start < 0:
        return None
    try:
        raw = json.loads(message[start:])
        step, rank, layer = _counter(float(raw["step"])), raw.get("rank"), str(raw["layer"])
        values = {k: float(raw[k]) for k in PROBE_VALUES if raw.get(k) is not None}
    except (ValueError, KeyError, TypeError, OverflowError):
        return None
    if step is None:
        return None
    checksum = raw.get("checksum")
    return Point(
        PROBE_KEY,
        step,
        values,
        identifier(str(rank)) if isinstance(rank, int) else None,
        layer=layer,
        checksum=str(checksum) if checksum is not None else None,
    )


def parse_message(message: str, known: tuple[Format, ...] | None = None) -> Point | None:
    """The progress point a message states, read by the first format that recognises it."""
    for fmt in known if known is not None else formats():
        if fmt.keywords.search(message) is None:
            continue
        found = fmt.line.search(message)
        if found is None:
            continue
        values: dict[str, float] = dict(fmt.spec.set)
        if fmt.pairs:
            for pair in _PAIR.finditer(message):
                name = fmt.pairs.get(_key(pair["key"]))
                value = _number(pair["v"])
                if name is not None and name not in values and value is not None:
                    values[name] = value
        for name, regex in fmt.fields:
            hit = regex.search(message)
            if hit is None:
                continue
            value = 1.0 if hit["v"] == "" else _number(hit["v"])
            if value is not None:
                values[name] = value * fmt.spec.scale.get(name, 1.0)
        if fmt.spec.requires and not any(name in values for name in fmt.spec.requires):
            continue
        rank_text = found.groupdict().get("rank")
        rank = identifier(rank_text)
        if rank is None and "rank" in values:
            rank = _counter(values["rank"])
        values.pop("rank", None)
        return Point(fmt.spec.id, _step(found), values, rank)
    return None
