"""The eval generator still produces a real hang with the installed torch (a live Gloo run)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from denpex.hang_view import HangRequest, hang_from_paths
from tests.conftest import REPO
from tests.hang.conftest import EVALS

# `hang_from_paths` with no matcher takes the library this process compiled: made from the
# session's cache (`compiled_once`), not parsed and compiled afresh without one (a minute).
pytestmark = pytest.mark.usefixtures("compiled_once")


@pytest.mark.slow
def test_a_fresh_sigkill_run_is_triaged_to_the_killed_rank(tmp_path) -> None:
    result = subprocess.run(
        [sys.executable, str(EVALS / "generate.py"), "--only", "killed", "--out", str(tmp_path)],
        capture_output=True,
        cwd=REPO,
        timeout=400,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    case = tmp_path / "killed"
    assert sorted(p.name for p in (case / "dumps").iterdir()) == [
        "fr_dump_0",
        "fr_dump_1",
        "fr_dump_3",
    ]
    report = hang_from_paths(
        HangRequest(
            paths=[str(case / "dumps"), str(case / "logs")],
            capture_times_file=case / "capture_times.json",
        )
    )
    best = report.candidates[0]
    assert (best.kind.value, best.ranks) == ("stopped_reporting", [2])
