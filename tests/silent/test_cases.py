"""The real silent-failure runs (evals/silent/cases) are read as their labels say, and healthy
runs (these, evals/healthy and the corpus's clean runs) raise no silent finding."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import REPO, diagnose_paths

CASES = sorted((REPO / "evals" / "silent" / "cases").glob("*/expected.json"))
HEALTHY = [
    REPO / "evals" / "healthy",
    *sorted((REPO / "evals" / "corpus").glob("inject-clean*")),
]


def _inputs(case: Path) -> list[str]:
    return [str(p) for p in sorted(case.iterdir()) if p.name != "expected.json"]


@pytest.mark.parametrize("label", CASES, ids=[p.parent.name for p in CASES])
def test_each_silent_case_is_found_with_its_step_and_ranks(label: Path) -> None:
    expected = json.loads(label.read_text())
    diagnosis = diagnose_paths(_inputs(label.parent))
    found = {f.failure_class: f for f in diagnosis.silent}
    assert sorted(found) == sorted(x["failure_class"] for x in expected["silent_findings"])
    for want in expected["silent_findings"]:
        got = found[want["failure_class"]]
        if want["step"] is not None:
            assert got.step is not None and abs(got.step - want["step"]) <= 2
        if want["ranks"] is not None:
            assert got.ranks == want["ranks"]
        assert got.evidence, "every finding cites lines"
    if expected["silent_findings"]:
        classes = [r.failure_class for r in diagnosis.root_causes[:3]]
        assert expected["failure_class"] in classes


def test_a_flip_that_also_printed_an_inf_grad_norm_keeps_the_rules_cause_first() -> None:
    # The rules' cause (grad_norm = inf on rank 1) stays first; the corruption suspicion on the
    # same rank is its alternative, never above it.
    case = REPO / "evals" / "silent" / "cases" / "bitflip-rank1"
    causes = diagnose_paths(_inputs(case)).root_causes
    assert [(c.failure_class, c.originating_rank) for c in causes[:2]] == [
        ("nan_or_inf", 1),
        ("silent_data_corruption", 1),
    ]


def test_suspected_corruption_is_never_confident() -> None:
    for label in CASES:
        for finding in diagnose_paths(_inputs(label.parent)).silent:
            if finding.failure_class == "silent_data_corruption":
                assert finding.suspicion and finding.confidence < 0.5 and finding.caveat


@pytest.mark.parametrize("path", HEALTHY, ids=[p.name for p in HEALTHY])
def test_healthy_runs_raise_no_silent_finding(path: Path) -> None:
    assert diagnose_paths([str(path)]).silent == []
