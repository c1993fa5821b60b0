"""Trimming removes only healthy step lines, from the middle of long runs, and edits nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.inject.trim import is_healthy, trim_healthy_runs

CORPUS = Path(__file__).resolve().parents[2] / "evals" / "corpus"
GENERATED_LOGS = sorted(CORPUS.glob("inject-*/**/*.log"))

STEP = (
    "2026-11-30 06:56:10,892 INFO train: step {n} loss 2.3223 acc 0.094 step_time 0.20s "
    "data_time 0.02s"
)
TRACEBACK = (
    "[rank3]: Traceback (most recent call last):\n[rank3]: IndexError: index out of range in self\n"
)


def _steps(count: int, prefix: str = "") -> str:
    return "".join(prefix + STEP.format(n=n) + "\n" for n in range(count))


def test_the_worker_s_step_lines_are_healthy_with_or_without_torchrun_s_prefix() -> None:
    assert is_healthy(STEP.format(n=3))
    assert is_healthy("[default2]:" + STEP.format(n=3))
    assert is_healthy(STEP.format(n=3).replace("train: ", "train: rank 5: "))


def test_anything_else_is_not_healthy() -> None:
    assert not is_healthy("[rank3]: IndexError: index out of range in self")
    assert not is_healthy(
        "2026-11-30 07:06:40,643 WARNING train: step 3: batch has no valid samples, skipping"
    )
    assert not is_healthy(STEP.format(n=3) + " trailing")
    assert not is_healthy("2026-11-30 06:34:24,911 INFO train: step 0 loss 7.0645")


def test_a_long_run_keeps_its_head_and_tail() -> None:
    text = _steps(30) + TRACEBACK
    result = trim_healthy_runs(text, keep_head=3, keep_tail=2)
    kept = result.text.splitlines()
    assert result.removed == 25
    assert kept[:3] == [STEP.format(n=n) for n in range(3)]
    assert kept[3:5] == [STEP.format(n=n) for n in (28, 29)]
    assert kept[5:] == TRACEBACK.splitlines()


def test_short_runs_are_left_alone() -> None:
    text = _steps(5) + TRACEBACK + _steps(5)
    result = trim_healthy_runs(text, keep_head=3, keep_tail=2)
    assert result.removed == 0
    assert result.text == text


def test_a_failure_line_splits_runs_so_its_neighbours_survive() -> None:
    text = _steps(10) + TRACEBACK + _steps(10, prefix="[default1]:")
    result = trim_healthy_runs(text, keep_head=1, keep_tail=1)
    lines = result.text.splitlines()
    index = lines.index("[rank3]: Traceback (most recent call last):")
    assert lines[index - 1] == STEP.format(n=9)
    assert lines[index + 2] == "[default1]:" + STEP.format(n=0)


def test_bytes_that_are_not_utf8_survive_a_round_trip() -> None:
    text = b"\xff\xfe garbage \x00 line\n".decode("utf-8", "surrogateescape") + _steps(40)
    result = trim_healthy_runs(text, keep_head=1, keep_tail=1)
    assert result.text.encode("utf-8", "surrogateescape").startswith(b"\xff\xfe garbage \x00")


@pytest.mark.parametrize("log", GENERATED_LOGS, ids=lambda p: str(p.relative_to(CORPUS)))
def test_on_captured_logs_only_healthy_lines_ever_go(log: Path) -> None:
    text = log.read_bytes().decode("utf-8", "surrogateescape")
    result = trim_healthy_runs(text, keep_head=0, keep_tail=0)
    others = [line for line in text.splitlines(keepends=True) if not is_healthy(line.rstrip("\n"))]
    assert result.text == "".join(others)
