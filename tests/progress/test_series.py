"""Progress lines become one series per rank, in step order, with their time and place."""

from __future__ import annotations

from denpex.progress.series import build_series
from tests.conftest import REPO
from tests.silent.helpers import records

HEALTHY = REPO / "evals" / "silent" / "cases" / "healthy-noisy-a" / "launcher.log"


def teed_lines() -> str:
    """Steps 10 and 11 of ranks 0 and 1 from a real torchrun --tee 3 log, with the last line
    repeated as when a tee and the rank's own file are both read."""
    lines = HEALTHY.read_text().splitlines()
    picked = [
        x for x in lines if any(f"rank {r}: step {s} " in x for r in (0, 1) for s in (10, 11))
    ]
    return "\n".join([*picked, picked[-1]]) + "\n"


def test_each_rank_gets_its_own_series_with_line_numbers_and_times() -> None:
    found = records(teed_lines())
    assert [r.line for r in found] == [1, 2, 3, 4, 5]
    assert found[0].time is not None and found[0].who.local_rank == 0
    series = build_series(found)
    assert [s.emitter.rank for s in series] == [0, 1]
    # The repeated line (a tee and a file, or a log shipped twice) is one point.
    assert [x.step for x in series[1].samples("loss")] == [10, 11]
    printed = [x for x in teed_lines().splitlines() if "rank 0:" in x]
    assert [
        f"compute_time {x.value:.3f}" in line
        for x, line in zip(series[0].step_times(), printed, strict=True)
    ] == [True, True]


def test_a_progress_bar_rewritten_with_carriage_returns_gives_every_update() -> None:
    bar = (
        "Epoch 0: :  10%|█         | 1/10 [00:49<07:25, reduced_train_loss=11.50, "
        "global_step=0.000, consumed_samples=2048.0, train_step_timing in s=49.50]\r"
        "Epoch 0: :  20%|██        | 2/10 [01:38<06:33, reduced_train_loss=11.21, "
        "global_step=1.000, consumed_samples=4096.0, train_step_timing in s=49.10]\n"
    )
    series = build_series(records(bar))
    assert [(x.step, x.value) for x in series[0].samples("loss")] == [(0, 11.50), (1, 11.21)]


def test_lines_without_a_step_are_numbered_in_order() -> None:
    text = (
        "{'loss': 2.1873, 'grad_norm': 1.46, 'learning_rate': 4.8e-05, 'epoch': 0.12}\n"
        "{'loss': 2.0512, 'grad_norm': 1.31, 'learning_rate': 4.6e-05, 'epoch': 0.24}\n"
    )
    samples = build_series(records(text))[0].samples("loss")
    assert [(x.step, x.step_inferred) for x in samples] == [(1, True), (2, True)]
