"""Shared paths for the hang tests: the eval cases are real dumps from real Gloo runs."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import REPO

EVALS = REPO / "evals" / "hang"
CASES = sorted(p.name for p in EVALS.iterdir() if (p / "expected.json").is_file())


def case_dir(name: str) -> Path:
    return EVALS / name
