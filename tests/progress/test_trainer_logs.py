"""Progress read from what real trainers printed: tests/progress/trainers/*.log are the output
of real runs (make_logs.py beside them: Hugging Face Trainer, PyTorch Lightning's tqdm bar,
Accelerate on two processes), stdout and stderr together as a job's log file holds them."""

from __future__ import annotations

import math
import re
from pathlib import Path

from denpex.progress.series import build_series
from denpex.silent.detect import find_silent_failures
from tests.silent.helpers import records

TRAINERS = Path(__file__).parent / "trainers"


def read(name: str) -> list:
    return records((TRAINERS / name).read_text("utf-8"), name)


def test_the_hf_trainers_log_dicts_are_read_between_its_progress_bar_updates() -> None:
    found = read("hf_trainer.log")
    (series,) = build_series(found)
    printed = re.findall(r"\{'loss': '([\d.]+)'", (TRAINERS / "hf_trainer.log").read_text())
    assert len(printed) == 20, "logging_steps=2 over 40 steps"
    losses = [s.value for s in series.samples("loss")]
    assert losses == [float(v) for v in printed]
    lrs = [s.value for s in series.samples("lr")]
    assert lrs[0] == 0.000975 and lrs == sorted(lrs, reverse=True), "linear decay, as printed"
    assert all(math.isfinite(s.value) for s in series.samples("grad_norm"))
    assert find_silent_failures(found) == []


def test_lightnings_tqdm_bar_gives_one_step_per_batch_across_epochs() -> None:
    found = read("lightning.log")
    (series,) = build_series(found)
    steps = {s.step for s in series.samples("loss")}
    # 2 epochs of 20 batches: step = epoch * 20 + batch; the bar shows the loss from batch 1.
    assert steps == set(range(1, 21)) | set(range(21, 41))
    assert series.samples("loss")[-1].value == 4.730
    assert find_silent_failures(found) == []


def test_accelerates_rank_prefix_makes_one_series_per_process_that_agree() -> None:
    found = read("accelerate.log")
    series = build_series(found)
    assert [s.emitter.rank for s in series] == [0, 1]
    for one in series:
        assert [s.step for s in one.samples("loss")] == list(range(40))
    # DDP's all-reduced gradients: both processes print the same clipped grad norm each step.
    norms = [[s.value for s in one.samples("grad_norm")] for one in series]
    assert norms[0] == norms[1]
    assert find_silent_failures(found) == []
