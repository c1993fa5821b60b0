"""`denpex diagnose` reads Flight Recorder dumps beside the logs (real Gloo runs of the corpus).

In these hangs the logs hold only victims: every waiting rank times out or loses its peer. The
dumps show who called what: the rank that issued another collective, the one that never
entered the collective its peers wait in, the one that stopped reporting.
"""

from __future__ import annotations

import json

import pytest

from denpex.evaluation.corpus import case_inputs
from tests.conftest import REPO, diagnose_paths

CORPUS = REPO / "evals" / "corpus"


def _case(name: str) -> tuple[dict, list[str]]:
    case = CORPUS / name
    return json.loads((case / "expected.json").read_text()), case_inputs(case)


@pytest.mark.parametrize(
    "name",
    [
        "inject-mismatched-collective-op",
        "inject-mismatched-collective-size",
        "inject-skip-step-collective",
    ],
)
def test_a_rank_that_called_another_collective_is_named_from_the_dumps(name: str) -> None:
    expected, inputs = _case(name)
    diagnosis = diagnose_paths(inputs)
    top = diagnosis.root_causes[0]
    assert (top.failure_class, top.originating_rank) == (
        "collective_mismatch",
        expected["originating_rank"],
    )
    assert top.signature_id == "flight_recorder.mismatched"
    assert top.dump_evidence and diagnosis.hang is not None


def test_a_straggler_is_told_from_a_dead_or_stopped_rank() -> None:
    expected, inputs = _case("inject-straggler-timeout")
    top = diagnose_paths(inputs).root_causes[0]
    # alive (it dumped) yet never entered the collective, after steps that kept slowing down
    assert (top.failure_class, top.originating_rank) == ("straggler", expected["originating_rank"])


def test_a_stopped_rank_is_the_one_that_stopped_reporting() -> None:
    expected, inputs = _case("inject-sigstop-rank-hang")
    top = diagnose_paths(inputs).root_causes[0]
    assert (top.failure_class, top.originating_rank) == (
        "collective_timeout",
        expected["originating_rank"],
    )
    assert top.signature_id == "flight_recorder.stopped_reporting"


def test_without_the_dumps_the_tracebacks_still_show_which_rank_called_another_collective() -> None:
    expected, inputs = _case("inject-mismatched-collective-op")
    logs_only = [path for path in inputs if not path.endswith("/fr")]
    top = diagnose_paths(logs_only).root_causes[0]
    # every rank times out; rank 3's traceback ends in all_gather, the others' in all_reduce
    assert (top.failure_class, top.originating_rank) == (
        "collective_mismatch",
        expected["originating_rank"],
    )
    assert top.rank_finding is not None and top.rank_finding.mechanism == "odd_one_out"
