"""The closed list of failure classes, read from taxonomy.yaml beside this module.

Consumes nothing; produces lookups from a failure class id to its category, meaning, owning
team and traits (how the reasoning treats its lines: job-wide, a scheduler action, a relayed
symptom, ...). The ids are a public contract (docs/taxonomy.md): bots and evals read them. Every
piece of per-class knowledge the reasoning uses is read here, never kept in Python sets.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import cache
from importlib import resources

import yaml


class Category(StrEnum):
    hardware = "hardware"
    distributed_communication = "distributed_communication"
    ml_numerical = "ml_numerical"
    data_pipeline = "data_pipeline"
    environment_configuration = "environment_configuration"
    resource_exhaustion = "resource_exhaustion"
    scheduler_infrastructure = "scheduler_infrastructure"
    application_bug = "application_bug"


class Owner(StrEnum):
    infrastructure = "infrastructure"
    training = "training"
    data = "data"
    platform = "platform"


class Relay(StrEnum):
    """How a symptom passes on a failure that happened elsewhere."""

    waiting = "waiting"
    """A rank left waiting in a collective for ranks that never reached it."""
    peer = "peer"
    """A rank lost its connection to a peer."""
    relayed = "relayed"
    """A library passing an error on (NCCL's async error)."""


@dataclass(frozen=True, slots=True)
class SymptomConfidence:
    """The confidence of an answer from a class's symptoms alone, by the suspects they leave."""

    no_suspect: float
    one_suspect: float
    several_suspects: float

    def for_suspects(self, count: int) -> float:
        if count == 0:
            return self.no_suspect
        return self.one_suspect if count == 1 else self.several_suspects


@dataclass(frozen=True, slots=True)
class Traits:
    """How the reasoning treats a class's lines (taxonomy.yaml explains each)."""

    job_wide: bool = False
    node_wide: bool = False
    executed_alike: bool = False
    acts_on_job: bool = False
    relay: Relay | None = None
    locates_origin: bool = True
    host_record: bool = False
    unread: bool = False
    symptom_confidence: SymptomConfidence = field(
        default_factory=lambda: SymptomConfidence(0.4, 0.4, 0.4)
    )

    def overridden(self, **stated: bool | None) -> Traits:
        """These traits with what a signature states in place of the class default."""
        return replace(self, **{name: value for name, value in stated.items() if value is not None})


@dataclass(frozen=True, slots=True)
class FailureClass:
    id: str
    category: Category
    owner: Owner
    meaning: str
    traits: Traits = field(default_factory=Traits)


@cache
def _raw() -> dict:
    text = resources.files("denpex").joinpath("taxonomy.yaml").read_text(encoding="utf-8")
    # libyaml's loader when present: the pure-Python one took a tenth of a second at each start.
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@cache
def classes() -> dict[str, FailureClass]:
    """Every failure class by id, in the order of the taxonomy file."""
    raw = _raw()
    declared = [Category(name) for name in raw["categories"]]
    if set(declared) != set(Category):
        raise ValueError("taxonomy.yaml categories differ from the Category enum")
    default_confidence = _symptom_confidence((raw.get("defaults") or {}).get("symptom_confidence"))
    return {
        class_id: FailureClass(
            id=class_id,
            category=Category(entry["category"]),
            owner=Owner(entry["owner"]),
            meaning=entry["meaning"],
            traits=_traits(class_id, entry, default_confidence),
        )
        for class_id, entry in raw["classes"].items()
    }


_CLASS_FIELDS = frozenset(
    {"category", "owner", "meaning", "dump_kinds", "dump_kinds_when_slowing", "divergent_calls"}
)
_TRAIT_FIELDS = frozenset(
    {
        "job_wide",
        "node_wide",
        "executed_alike",
        "acts_on_job",
        "relay",
        "locates_origin",
        "host_record",
        "unread",
        "symptom_confidence",
    }
)


def _symptom_confidence(raw: dict | None) -> SymptomConfidence:
    if raw is None:
        return SymptomConfidence(0.4, 0.4, 0.4)
    values = {name: float(raw[name]) for name in ("no_suspect", "one_suspect", "several_suspects")}
    if not all(0.0 <= v <= 1.0 for v in values.values()):
        raise ValueError("taxonomy.yaml symptom_confidence values lie in [0, 1]")
    return SymptomConfidence(**values)


def _traits(class_id: str, entry: dict, default_confidence: SymptomConfidence) -> Traits:
    unknown = set(entry) - _CLASS_FIELDS - _TRAIT_FIELDS
    if unknown:
        raise ValueError(f"taxonomy.yaml class {class_id} has unknown fields {sorted(unknown)}")
    confidence = entry.get("symptom_confidence")
    return Traits(
        job_wide=bool(entry.get("job_wide", False)),
        node_wide=bool(entry.get("node_wide", False)),
        # A job-wide fault is executed alike by definition.
        executed_alike=bool(entry.get("executed_alike", entry.get("job_wide", False))),
        acts_on_job=bool(entry.get("acts_on_job", False)),
        relay=Relay(entry["relay"]) if entry.get("relay") else None,
        locates_origin=bool(entry.get("locates_origin", True)),
        host_record=bool(entry.get("host_record", False)),
        unread=bool(entry.get("unread", False)),
        symptom_confidence=(
            _symptom_confidence(confidence) if confidence is not None else default_confidence
        ),
    )


def traits(class_id: str | None) -> Traits:
    """The traits of a class; a context line (no class) has the defaults."""
    return failure_class(class_id).traits if class_id is not None else Traits()


@cache
def divergent_calls_class() -> str:
    """The class of a stall in which one rank called a different collective than the rest."""
    marked = [c for c, entry in _raw()["classes"].items() if entry.get("divergent_calls")]
    if len(marked) != 1:
        raise ValueError("taxonomy.yaml marks exactly one class with divergent_calls")
    return marked[0]


@cache
def _dump_kinds() -> tuple[dict[str, str], dict[str, str]]:
    """Flight Recorder candidate kind -> class, plain and when the job was slowing down."""
    plain: dict[str, str] = {}
    slowing: dict[str, str] = {}
    for class_id, entry in _raw()["classes"].items():
        for table, name in ((plain, "dump_kinds"), (slowing, "dump_kinds_when_slowing")):
            for kind in entry.get(name) or ():
                if kind in table:
                    raise ValueError(f"taxonomy.yaml: dump kind {kind!r} ({name}) is claimed twice")
                table[kind] = class_id
    return plain, slowing


def class_of_dump_kind(kind: str, *, slowing: bool = False) -> str:
    """The class a Flight Recorder candidate of this kind means."""
    plain, when_slowing = _dump_kinds()
    if slowing and kind in when_slowing:
        return when_slowing[kind]
    try:
        return plain[kind]
    except KeyError:
        raise KeyError(f"taxonomy.yaml gives no class for dump kind {kind!r}") from None


def failure_class(class_id: str) -> FailureClass:
    """The class with this id; the KeyError names the id when the taxonomy lacks it."""
    try:
        return classes()[class_id]
    except KeyError:
        raise KeyError(f"{class_id!r} is not a failure class in the taxonomy") from None


def is_failure_class(class_id: str) -> bool:
    return class_id in classes()


@cache
def consequences() -> dict[str, frozenset[str]]:
    """For each class, the classes a failure of it can bring about on the same rank or host."""
    known = classes()
    table: dict[str, frozenset[str]] = {}
    for cause, effects in (_raw().get("consequences") or {}).items():
        unknown = {cause, *effects} - set(known)
        if unknown:
            raise ValueError(f"taxonomy.yaml consequences name unknown classes {sorted(unknown)}")
        table[cause] = frozenset(effects)
    return table


def can_cause(cause: str, effect: str) -> bool:
    return effect in consequences().get(cause, frozenset())


@dataclass(frozen=True, slots=True)
class Reading:
    """A class that often lies behind another when the input holds no record of why it happened
    (taxonomy.yaml `often_behind`): why it is listed and what to check."""

    failure_class: str
    why: str
    check: str
    when: re.Pattern[str] | None = None
    """Only when the answer's own lines say this (a class that covers several messages, of
    which only some leave this reading open)."""


@cache
def _often_behind() -> dict[str, tuple[Reading, ...]]:
    known = classes()
    table: dict[str, tuple[Reading, ...]] = {}
    for class_id, entries in (_raw().get("often_behind") or {}).items():
        readings = tuple(
            Reading(
                entry["class"],
                " ".join(entry["why"].split()),
                entry["check"],
                re.compile(entry["when"]) if "when" in entry else None,
            )
            for entry in entries
        )
        unknown = {class_id, *(r.failure_class for r in readings)} - set(known)
        if unknown:
            raise ValueError(f"taxonomy.yaml often_behind names unknown classes {sorted(unknown)}")
        table[class_id] = readings
    return table


def often_behind(class_id: str) -> tuple[Reading, ...]:
    """What most often lies behind this class when the input does not say, likeliest first."""
    return _often_behind().get(class_id, ())


@cache
def category_next_steps() -> dict[Category, tuple[str, ...]]:
    """Next-step templates every root cause of a category receives after its signature's."""
    raw = _raw().get("category_next_steps") or {}
    return {Category(name): tuple(steps) for name, steps in raw.items()}


@cache
def _class_steps() -> dict[str, tuple[str, ...]]:
    raw = _raw().get("class_next_steps") or {}
    unknown = set(raw) - set(classes())
    if unknown:
        raise ValueError(f"taxonomy.yaml class_next_steps name unknown classes {sorted(unknown)}")
    return {name: tuple(steps) for name, steps in raw.items()}


def class_next_steps(class_id: str) -> tuple[str, ...]:
    """Next steps for a cause established without a signature (e.g. from Flight Recorder)."""
    return _class_steps().get(class_id, ())
