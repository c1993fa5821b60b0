"""Leave-one-out retrieval quality over a labelled case directory (the evals/corpus layout)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from denpex.errors import InputError
from denpex.evaluation.retrieval import evaluate_retrieval
from denpex.retrieval.corpus import load_cases
from tests.conftest import cache_dir, cached_library
from tests.hybrid.support import QUICK_SUBSET as SUBSET
from tests.hybrid.support import copy_cases


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, embedder):
    corpus = copy_cases(SUBSET, tmp_path_factory.mktemp("corpus"))
    return evaluate_retrieval(
        [corpus],
        workdir=tmp_path_factory.mktemp("work"),
        library=cached_library(),
        embedder=embedder,
        cache_dir=cache_dir(),
    )


def test_every_labelled_case_is_a_query_and_clean_runs_are_set_aside(report) -> None:
    assert sorted(r.case for r in report.results) == sorted(set(SUBSET) - {"clean"})
    assert report.clean_cases == ["clean"]


def test_no_case_is_its_own_neighbour(report) -> None:
    for result in report.results:
        assert result.case not in {name for name, _, _ in result.nearest}
        assert len(result.nearest) == 5


def test_a_repeated_failure_finds_its_twin(report) -> None:
    by_case = {r.case: r for r in report.results}
    for name in ("ckpt-missing", "ckpt-size", "ckpt-unexpected", "killed-rank0", "killed-rank1"):
        assert by_case[name].at_1_credit == 1.0, by_case[name]
        assert by_case[name].at_5 == by_case[name].expected
    # A lone KeyError has no twin here: nothing can be right, and nothing is.
    assert by_case["exc-keyerror"].hit_5 is False


def test_the_figures_are_computed_from_the_cases(report) -> None:
    results = report.results
    assert report.accuracy_at_1 == pytest.approx(sum(r.at_1_credit for r in results) / len(results))
    assert report.accuracy_at_5 == pytest.approx(
        sum(r.at_5 == r.expected for r in results) / len(results)
    )
    assert report.hit_at_5 == pytest.approx(sum(r.hit_5 for r in results) / len(results))
    coverage, accuracy = report.answered_at(0.0)
    assert coverage == 1.0 and accuracy == pytest.approx(report.accuracy_at_5)
    document = report.as_dict()
    assert json.loads(json.dumps(document))["cases"] == len(results)


def test_a_label_outside_the_taxonomy_is_an_error(tmp_path: Path) -> None:
    case = tmp_path / "odd"
    case.mkdir()
    (case / "launcher.log").write_text("x\n")
    (case / "expected.json").write_text(json.dumps({"failure_class": "cosmic_rays"}))
    with pytest.raises(InputError, match="not a taxonomy class"):
        load_cases(tmp_path)
    with pytest.raises(InputError, match="not a directory"):
        load_cases(tmp_path / "missing")


def test_several_case_directories_are_one_history_and_names_may_not_repeat(tmp_path) -> None:
    from denpex.errors import InputError
    from denpex.retrieval.corpus import load_corpora

    first = copy_cases(["killed-rank0", "clean"], tmp_path / "a")
    second = copy_cases(["exc-keyerror"], tmp_path / "b")
    assert [c.name for c in load_corpora([first, second])] == [
        "clean",
        "killed-rank0",
        "exc-keyerror",
    ]
    with pytest.raises(InputError, match="same case name"):
        load_corpora([first, copy_cases(["clean"], tmp_path / "c")])
