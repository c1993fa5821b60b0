"""The command line of the fan-out: `--workers` locally, `--broker` on Celery workers."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import BAD_SAMPLE, REPO
from tests.distributed.test_fanout import without_timings


def _denpex(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "denpex", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
        check=False,
    )


def test_diagnose_with_workers_prints_the_single_process_json() -> None:
    alone = _denpex("diagnose", str(BAD_SAMPLE), "-f", "json")
    spread = _denpex("diagnose", str(BAD_SAMPLE), "-f", "json", "--workers", "2")
    assert alone.returncode == spread.returncode == 0, spread.stderr
    assert without_timings(json.loads(spread.stdout)) == without_timings(json.loads(alone.stdout))


def test_a_broker_that_cannot_be_reached_is_one_line_and_exit_2() -> None:
    pytest.importorskip("celery", reason="Celery jobs need the celery extra")
    result = _denpex("diagnose", str(BAD_SAMPLE), "--broker", "redis://127.0.0.1:1/0")
    assert result.returncode == 2
    assert result.stderr.startswith("denpex: cannot reach the broker or result backend")
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stdout == ""
