"""Two doors, one truth: `denpex hang` and `denpex diagnose` read the same evidence.

Every hang case in `evals/` (the real Gloo hangs of `evals/hang/`, and the corpus cases whose
folder holds Flight Recorder dumps under `fr/`) goes through both doors with the same inputs
and no option that only one door has: both must single out the same culprit ranks with the same
confidence (the hang verdict each door carries), and the diagnosis's cause read from the dumps
must state every culprit rank the dumps name. (The diagnosis then weighs that cause against the
logs' own: its confidence there is the diagnosis's, not the dumps' alone.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from denpex.hang_view import HangRequest, hang_from_paths
from denpex.pipeline import diagnose
from tests.conftest import REPO

pytestmark = pytest.mark.usefixtures("compiled_once")  # both doors take the process's library

HANG_CASES = sorted(
    p for p in (REPO / "evals" / "hang").iterdir() if (p / "expected.json").is_file()
)
CORPUS_CASES = sorted(p.parent for p in (REPO / "evals" / "corpus").glob("*/fr") if p.is_dir())


def _inputs(case: Path) -> list[str]:
    """What a user would point both commands at: the dumps and every log, no answer key."""
    if (case / "fr").is_dir():
        return [str(p) for p in sorted(case.iterdir()) if p.name != "expected.json"]
    return [str(case / "dumps"), str(case / "logs")]


def _verdicts(report) -> list[tuple[str, list[int], float]]:
    return [(c.kind.value, c.ranks, c.confidence) for c in report.candidates]


def test_the_hang_cases_are_found() -> None:
    assert len(HANG_CASES) >= 11 and len(CORPUS_CASES) >= 6


@pytest.mark.parametrize("case", HANG_CASES + CORPUS_CASES, ids=lambda p: p.name)
def test_hang_and_diagnose_name_the_same_culprits_with_the_same_confidence(case: Path) -> None:
    paths = _inputs(case)
    hang = hang_from_paths(HangRequest(paths=paths))
    diagnosis = diagnose(paths)
    assert diagnosis.hang is not None
    assert _verdicts(diagnosis.hang) == _verdicts(hang), hang.summary
    assert diagnosis.hang.expected_ranks == hang.expected_ranks
    if not hang.candidates:
        return
    top = hang.candidates[0]
    from_dumps = [
        r for r in diagnosis.root_causes if r.signature_id == f"flight_recorder.{top.kind}"
    ]
    assert from_dumps, "the dumps' verdict is among the diagnosis's causes"
    assert from_dumps[0].originating_ranks == top.ranks


def test_two_withheld_ranks_are_stated_not_null() -> None:
    case = REPO / "evals" / "hang" / "withheld_several"
    expected = json.loads((case / "expected.json").read_text())["culprit"]["ranks"]
    top = diagnose(_inputs(case)).root_causes[0]
    assert top.originating_rank is None, "one field cannot hold two ranks"
    assert top.originating_ranks == expected == [1, 4]


def test_the_highest_rank_silent_is_expected_from_its_log_without_world_size() -> None:
    # Rank 3 of 4 was SIGSTOPped and left no dump (the dumps are ranks 0-2); only the launcher's
    # and the ranks' logs show there was a rank 3. Without --world-size, hang must still see it.
    case = REPO / "evals" / "corpus" / "inject-sigstop-rank-hang"
    report = hang_from_paths(HangRequest(paths=_inputs(case)))
    assert report.expected_ranks == [0, 1, 2, 3]
    top = report.candidates[0]
    assert (top.kind.value, top.ranks, top.confidence >= 0.6) == ("stopped_reporting", [3], True)
