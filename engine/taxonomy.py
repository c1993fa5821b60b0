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
def classes() -> dict[str, FailureClass]:
    """Every failure class by id, in the order of the taxonomy file."""
    text = resources.files("denpex").joinpath("taxonomy.yaml").read_text(encoding="utf-8")
    raw = yaml.safe_load(text)
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
