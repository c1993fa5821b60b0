"""Every eval case, produced by real Gloo runs (evals/hang/generate.py), gets its expected verdict.

Each case is triaged as `denpex hang` would triage it: its dumps (pickle, then JSON) and its
ranks' logs, with and without the capture times the generator recorded.
"""

from __future__ import annotations

import json

import pytest

from denpex.hang.models import Candidate, HangReport
from denpex.hang_view import HangRequest, hang_from_paths
from tests.hang.conftest import CASES, case_dir

# `hang_from_paths` with no matcher takes the library this process compiled: made from the
# session's cache (`compiled_once`), not parsed and compiled afresh without one (a minute).
pytestmark = pytest.mark.usefixtures("compiled_once")


def _triage(case: str, form: str = "dumps", *, with_times: bool = True) -> HangReport:
    root = case_dir(case)
    times = root / "capture_times.json" if with_times else None
    return hang_from_paths(
        HangRequest(paths=[str(root / form), str(root / "logs")], capture_times_file=times)
    )


def _expected(case: str) -> dict:
    return json.loads((case_dir(case) / "expected.json").read_text())


def _is(candidate: Candidate, culprit: dict) -> bool:
    return (
        candidate.kind.value == culprit["kind"]
        and candidate.ranks == culprit["ranks"]
        and candidate.process_group == culprit["process_group"]
        and candidate.seq == culprit["seq"]
    )


def _check(report: HangReport, expected: dict) -> None:
    assert report.status.value == expected["status"], report.summary
    culprit = expected["culprit"]
    if culprit is None:
        assert report.candidates == []
        return
    top = report.candidates[0]
    if expected.get("ambiguous"):
        tied = [c for c in report.candidates if c.confidence == top.confidence]
        assert len(tied) > 1, "an ambiguous case must not name one culprit"
        assert any(_is(c, culprit) for c in tied), report.summary
    else:
        assert _is(top, culprit), report.summary


def test_there_are_eval_cases_for_every_scenario_the_issue_names() -> None:
    assert {
        "healthy",
        "withheld_one",
        "withheld_several",
        "mismatch_op",
        "mismatch_size",
        "killed",
        "stopped",
    } <= set(CASES)


@pytest.mark.parametrize("case", CASES)
def test_the_pickled_dumps_give_the_expected_verdict(case: str) -> None:
    _check(_triage(case), _expected(case))


@pytest.mark.parametrize("case", CASES)
def test_the_json_dumps_of_the_same_moment_give_the_same_verdict(case: str) -> None:
    _check(_triage(case, "dumps_json"), _expected(case))


@pytest.mark.parametrize("case", CASES)
def test_without_capture_times_the_verdict_holds_and_the_gap_is_said(case: str) -> None:
    report = _triage(case, with_times=False)
    _check(report, _expected(case))
    assert any("capture times unknown" in note for note in report.incomplete)


def test_killed_and_stopped_differ_in_what_the_peers_logs_say() -> None:
    killed = _triage("killed").candidates[0]
    stopped = _triage("stopped").candidates[0]
    assert any("connection close" in s.reason for s in killed.support)
    assert any("timed out" in s.reason for s in stopped.support)
    assert not any("connection close" in s.reason for s in stopped.support)
    assert all(not s.counted for s in killed.support + stopped.support)


def test_the_victim_that_aborted_on_a_size_mismatch_is_ranked_below_the_culprit() -> None:
    report = _triage("mismatch_size")
    kinds = [(c.kind.value, c.ranks) for c in report.candidates]
    assert kinds[0] == ("mismatched", [1])
    assert ("stopped_reporting", [0]) in kinds
    victim = next(c for c in report.candidates if c.kind.value == "stopped_reporting")
    assert victim.confidence < report.candidates[0].confidence
    assert any("victim" in caveat for caveat in victim.caveats)


def test_a_rank_waiting_in_another_groups_collective_is_a_consequence_not_the_cause() -> None:
    report = _triage("withheld_subgroup")
    blocked = [c for c in report.candidates if c.kind.value == "stalled" and c.ranks == [0]]
    assert blocked and blocked[0].process_group == "1"
    assert blocked[0].confidence < report.candidates[0].confidence


def test_two_groups_waiting_on_each_other_are_reported_as_ambiguous() -> None:
    report = _triage("skipped_subgroup")
    top = report.candidates[:2]
    assert {tuple(c.ranks) for c in top} == {(0,), (1,)}
    assert all("wait on each other" in " ".join(c.caveats) for c in top)


def test_the_healthy_control_has_no_candidates_and_no_plan() -> None:
    report = _triage("healthy")
    assert report.candidates == [] and report.isolation_plan is None
    assert report.missing_ranks == []
    assert "no hang evidence" in report.summary
