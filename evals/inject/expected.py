"""expected.json: the ground truth of one corpus case, and its schema check.

Consumes label values (from a scenario and its captured text, or from a person for hand-collected
cases); produces the JSON document the scorer reads, and `problems`, the list of ways a document
breaks the contract (field names, types, taxonomy ids and categories, consistency). The field
names are the contract with `denpex eval`; do not rename them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from denpex.taxonomy import classes

FIELDS = (
    "case",
    "scenario",
    "expect_failure",
    "failure_class",
    "category",
    "originating_rank",
    "misleading",
    "loudest_error",
    "launcher",
    "world_size",
    "seed",
    "simulated",
    "source",
    "notes",
)


def category_of(failure_class: str | None) -> str | None:
    return None if failure_class is None else str(classes()[failure_class].category)


def write(case_dir: Path, document: dict[str, Any]) -> None:
    ordered = {name: document[name] for name in FIELDS}
    (case_dir / "expected.json").write_text(
        json.dumps(ordered, indent=2, ensure_ascii=False) + "\n"
    )


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def problems(document: object, case_dir_name: str) -> list[str]:
    """Every way this document breaks the contract; empty when it is sound."""
    if not isinstance(document, dict):
        return ["expected.json is not a JSON object"]
    found = []
    missing = [name for name in FIELDS if name not in document]
    extra = sorted(set(document) - set(FIELDS))
    if missing:
        found.append(f"missing fields: {', '.join(missing)}")
    if extra:
        found.append(f"unknown fields: {', '.join(extra)}")
    if missing:
        return found
    if document["case"] != case_dir_name:
        found.append(f"case {document['case']!r} is not the directory name {case_dir_name!r}")
    for name in ("scenario", "source"):
        if not isinstance(document[name], str) or not document[name].strip():
            found.append(f"{name} must be a non-empty string")
    for name in ("expect_failure", "misleading"):
        if not isinstance(document[name], bool):
            found.append(f"{name} must be true or false")
    for name in ("loudest_error", "launcher"):
        if document[name] is not None and not isinstance(document[name], str):
            found.append(f"{name} must be a string or null")
    if not isinstance(document["notes"], str):
        found.append("notes must be a string")
    simulated = document["simulated"]
    if not isinstance(simulated, list) or not all(isinstance(s, str) for s in simulated):
        found.append("simulated must be a list of strings")
    found += _rank_problems(document)
    found += _class_problems(document)
    return found


def _rank_problems(document: dict[str, Any]) -> list[str]:
    found = []
    world_size, rank, seed = document["world_size"], document["originating_rank"], document["seed"]
    if world_size is not None and not (_is_int(world_size) and world_size >= 1):
        found.append("world_size must be a positive integer or null")
    if seed is not None and not _is_int(seed):
        found.append("seed must be an integer or null")
    if rank is not None:
        if not (_is_int(rank) and rank >= 0):
            found.append("originating_rank must be a non-negative integer or null")
        elif _is_int(world_size) and rank >= world_size:
            found.append(f"originating_rank {rank} is outside world_size {world_size}")
    return found


def _class_problems(document: dict[str, Any]) -> list[str]:
    failure_class, category = document["failure_class"], document["category"]
    if document["expect_failure"] is False:
        found = []
        for name in ("failure_class", "category", "originating_rank"):
            if document[name] is not None:
                found.append(f"{name} must be null when expect_failure is false")
        if document["misleading"] is not False:
            found.append("misleading must be false when expect_failure is false")
        return found
    if failure_class not in classes():
        return [f"failure_class {failure_class!r} is not in the taxonomy"]
    if category != category_of(failure_class):
        return [
            f"category {category!r} does not match {failure_class}'s category "
            f"{category_of(failure_class)!r}"
        ]
    return []
