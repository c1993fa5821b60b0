"""Leave-one-family-out: with a family removed, does retrieval still name the right class?"""

from __future__ import annotations

import pytest

from denpex.evaluation.family_out import evaluate_family_out
from tests.conftest import cache_dir, cached_library
from tests.hybrid.support import QUICK_SUBSET as SUBSET
from tests.hybrid.support import copy_cases


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, embedder):
    corpus = copy_cases(SUBSET, tmp_path_factory.mktemp("corpus"))
    return evaluate_family_out(
        [corpus],
        workdir=tmp_path_factory.mktemp("work"),
        library=cached_library(),
        embedder=embedder,
        families=None,  # every family; each case is re-diagnosed without the one that settled it
        cache_dir=cache_dir(),
    )


def _checkpoint_family(report) -> str:
    """The family that settles the checkpoint cases, whichever the library makes it."""
    return next(o.family for o in report.outcomes if o.case == "ckpt-size")


def test_each_settled_case_is_diagnosed_again_without_its_family(report) -> None:
    settled = [o.case for o in report.outcomes]
    assert len(settled) == len(set(settled))  # one family settles a case, not two
    assert set(settled) <= set(SUBSET) - {"clean"}
    assert {"ckpt-missing", "ckpt-size", "ckpt-unexpected"} <= set(settled)
    for family, totals in report.per_family().items():
        assert totals["settled_cases"] == sum(o.family == family for o in report.outcomes)


def test_a_failure_seen_before_is_still_named_as_best_effort(report) -> None:
    family = _checkpoint_family(report)
    by_case = {o.case: o for o in report.outcomes if o.family == family}
    for name in ("ckpt-missing", "ckpt-size", "ckpt-unexpected"):
        outcome = by_case[name]
        # Named by retrieval, or kept from a catalog signature below the threshold that says
        # the same (Transformers prints torch's "Error(s) in loading state_dict" itself): the
        # best effort adds to the rules and never undoes them.
        assert (outcome.status, outcome.named) == ("best_effort", "checkpoint_mismatch")
        assert outcome.source in ("retrieval", "rules")
        assert outcome.right_best_effort


def test_the_totals_add_up_and_say_so(report) -> None:
    totals = report.as_dict()["total"]
    assert totals["settled_cases"] == len(report.outcomes)
    assert totals["best_effort_right"] == sum(o.right_best_effort for o in report.outcomes)
    assert report.best_effort_right_rate == totals["best_effort_right"] / totals["settled_cases"]
    text = report.summary_text()
    family = _checkpoint_family(report)
    count = sum(o.family == family for o in report.outcomes)
    assert f"{family}: {count} settled case(s)" in text
    assert "settled no case of this corpus: " in text  # e.g. xid: no GPU in these runs
