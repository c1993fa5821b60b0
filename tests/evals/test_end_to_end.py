"""One real scenario, end to end: launch, capture, label, clean up."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from evals.inject import expected
from evals.inject.harness import Status, run_scenario
from evals.inject.scenarios import BY_ID


def _run_dirs() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob("denpex-inject-rendezvous-port-busy-*"))


@pytest.mark.slow
def test_a_busy_master_port_becomes_a_labelled_case_and_leaves_nothing_behind(
    tmp_path: Path,
) -> None:
    before = _run_dirs()
    outcome = run_scenario(BY_ID["rendezvous-port-busy"], 17, tmp_path)

    assert outcome.status is Status.WRITTEN, outcome.reason
    case = tmp_path / "inject-rendezvous-port-busy"
    document = json.loads((case / "expected.json").read_text())
    assert expected.problems(document, case.name) == []
    assert document["failure_class"] == "rendezvous_failure"
    assert document["originating_rank"] is None
    assert "EADDRINUSE" in (case / "launcher.log").read_text()
    assert _run_dirs() == before
    assert not list(tmp_path.glob(".*.partial"))
