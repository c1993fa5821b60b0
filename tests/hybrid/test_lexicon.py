"""The generic abnormal-line lexicon is a signature library like any other: it lints clean."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from denpex.match.lint import lint
from denpex.signatures.library import load_library

LEXICON = Path(str(resources.files("denpex.hybrid").joinpath("lexicon")))


def test_every_example_matches_in_every_backend_and_every_near_miss_does_not() -> None:
    assert lint(LEXICON) == []


def test_the_lexicon_only_marks_lines_it_never_classifies_them() -> None:
    library = load_library(LEXICON)
    assert {s.failure_class for s in library.signatures} == {"unknown"}
    assert {s.family for s in library.signatures} == {"abnormal", "continuation", "last_resort"}
