"""Reads a labelled case directory: `<corpus>/<case>/expected.json` plus the case's logs.

Consumes a directory laid out like `evals/corpus` (one folder per case, `expected.json` with at
least `failure_class`, every other file an input); produces `LabelledCase`s in name order. A
case whose label is not a taxonomy class is an error, not a silent skip.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from denpex.errors import InputError
from denpex.taxonomy import is_failure_class

EXPECTED = "expected.json"


@dataclass(frozen=True)
class LabelledCase:
    name: str
    directory: Path
    failure_class: str | None
    """None for a case that expects no failure (a clean run)."""
    inputs: tuple[str, ...]
    source: str | None = None
    """Where the case was taken from, when that is a place (an issue thread's URL): cases of
    one such source are one incident for evaluation, so a case never retrieves its own
    source's twin. A generator's description names no place: its runs are distinct."""


def same_source(case: LabelledCase, cases: Sequence[LabelledCase]) -> list[LabelledCase]:
    """The case and every other case taken from the same source."""
    return [c for c in cases if c is case or (case.source and c.source == case.source)]


def _inputs_of(directory: Path) -> tuple[str, ...]:
    files = [
        path
        for path in sorted(directory.rglob("*"))
        if path.is_file()
        and path.name != EXPECTED
        and not any(part.startswith(".") for part in path.relative_to(directory).parts)
    ]
    return tuple(str(path) for path in files)


def load_corpora(corpora: Sequence[Path]) -> list[LabelledCase]:
    """The cases of several case directories together (a corpus and a held-out set), whose case
    names must not collide."""
    cases = [case for corpus in corpora for case in load_cases(corpus)]
    seen: set[str] = set()
    for case in cases:
        if case.name in seen:
            raise InputError(f"{case.name}: the same case name in two directories")
        seen.add(case.name)
    return cases


def load_cases(corpus: Path) -> list[LabelledCase]:
    if not corpus.is_dir():
        raise InputError(f"{corpus}: not a directory of cases")
    cases = []
    for expected in sorted(corpus.glob(f"*/{EXPECTED}")):
        directory = expected.parent
        try:
            label = json.loads(expected.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise InputError(f"{expected}: unreadable ({error})") from None
        if not isinstance(label, dict) or "failure_class" not in label:
            raise InputError(f"{expected}: no failure_class field")
        failure_class = label["failure_class"]
        if failure_class is not None and not is_failure_class(str(failure_class)):
            raise InputError(f"{expected}: {failure_class!r} is not a taxonomy class")
        inputs = _inputs_of(directory)
        if not inputs:
            raise InputError(f"{directory}: a case without log files")
        source = label.get("source")
        cases.append(
            LabelledCase(
                directory.name,
                directory,
                failure_class,
                inputs,
                source if isinstance(source, str) and "://" in source else None,
            )
        )
    if not cases:
        raise InputError(f"{corpus}: no <case>/{EXPECTED} found")
    return cases
