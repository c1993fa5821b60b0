"""Leave-one-family-out: with a family removed, does retrieval still name the right class?"""

from __future__ import annotations

import pytest

from denpex.hybrid.family_out import evaluate_family_out
from denpex.match.library import load_library
from tests.hybrid.support import copy_cases

SUBSET = [
    "ckpt-missing",
    "ckpt-size",
    "ckpt-unexpected",
    "killed-rank0",
    "killed-rank1",
    "exc-keyerror",
    "clean",
]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, embedder):
    corpus = copy_cases(SUBSET, tmp_path_factory.mktemp("corpus"))
    return evaluate_family_out(
        corpus,
        workdir=tmp_path_factory.mktemp("work"),
        library=load_library(),
        embedder=embedder,
        families=["python", "xid"],
    )


def test_cases_the_family_settled_are_diagnosed_again_without_it(report) -> None:
    python = [o for o in report.outcomes if o.family == "python"]
    # The generic exception signature settles every one of these torchrun failures.
    assert sorted(o.case for o in python) == sorted(set(SUBSET) - {"clean"})
    assert all(o.rules_class == "python_exception" for o in python)
    assert report.per_family()["xid"]["settled_cases"] == 0


def test_a_failure_seen_before_is_still_named_as_best_effort(report) -> None:
    by_case = {o.case: o for o in report.outcomes}
    for name in ("ckpt-missing", "ckpt-size", "ckpt-unexpected"):
        outcome = by_case[name]
        assert (outcome.status, outcome.source, outcome.named) == (
            "best_effort",
            "retrieval",
            "checkpoint_mismatch",
        )
        assert outcome.right_best_effort


def test_the_totals_add_up_and_say_so(report) -> None:
    totals = report.as_dict()["total"]
    assert totals["settled_cases"] == len(report.outcomes)
    assert totals["best_effort_right"] == sum(o.right_best_effort for o in report.outcomes)
    assert report.best_effort_right_rate == totals["best_effort_right"] / totals["settled_cases"]
    text = report.summary_text()
    assert "python: 6 settled case(s)" in text
    assert "settled no case of this corpus: xid" in text
