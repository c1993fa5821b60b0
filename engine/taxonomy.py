"""The closed list of failure classes, read from taxonomy.yaml beside this module.

Consumes nothing; produces lookups from a failure class id to its category, meaning and owning
team. The ids are a public contract (docs/taxonomy.md): bots and evals read them.
"""

from __future__ import annotations

from dataclasses import dataclass
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


@dataclass(frozen=True, slots=True)
class FailureClass:
    id: str
    category: Category
    owner: Owner
    meaning: str


@cache
def _raw() -> dict:
    text = resources.files("denpex").joinpath("taxonomy.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


@cache
def classes() -> dict[str, FailureClass]:
    """Every failure class by id, in the order of the taxonomy file."""
    raw = _raw()
    declared = [Category(name) for name in raw["categories"]]
    if set(declared) != set(Category):
        raise ValueError("taxonomy.yaml categories differ from the Category enum")
    return {
        class_id: FailureClass(
            id=class_id,
            category=Category(entry["category"]),
            owner=Owner(entry["owner"]),
            meaning=entry["meaning"],
        )
        for class_id, entry in raw["classes"].items()
    }


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
