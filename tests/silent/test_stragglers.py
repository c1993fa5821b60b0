"""Stragglers: slower than the peers by robust statistics, with the host and the cost."""

from __future__ import annotations

import random

from denpex.ingest.attribution import attribution_from_path
from denpex.ingest.lines import SourceContext
from denpex.ingest.reader import Chunk
from denpex.progress.series import ProgressReader, ProgressScanner
from denpex.silent.detect import find_silent_failures
from tests.silent.helpers import records


def rank_log(rank: int, slow: float, noise: random.Random, steps: int = 60) -> str:
    # evals/silent/train.py's line: compute_time excludes waiting for peers in the all-reduce,
    # step_time is the same on every rank because every rank waits for the slowest.
    lines = []
    for step in range(steps):
        compute = (0.030 + noise.uniform(0, 0.02)) * slow
        lines.append(
            f"2026-12-01 15:35:{step % 60:02d},118 INFO train: rank {rank}: step {step} "
            f"loss {2.0 - 0.01 * step:.4f} grad_norm 3.0000 lr 0.05 step_time 0.081 "
            f"compute_time {compute:.3f}"
        )
    return "\n".join(lines) + "\n"


def job(slow: dict[int, float], seed: int = 0) -> list:
    noise = random.Random(seed)
    found = []
    for rank in range(12):
        host = f"node0{rank // 4 + 1}"
        found += records(rank_log(rank, slow.get(rank, 1.0), noise), f"{host}/rank{rank}.log")
    return found


def test_every_rank_of_one_slow_host_is_reported_as_that_host_with_its_cost() -> None:
    findings = find_silent_failures(job({4: 1.5, 5: 1.5, 6: 1.5, 7: 1.5}))
    assert [(f.failure_class, f.hosts, f.ranks) for f in findings] == [
        ("straggler", ["node02"], [4, 5, 6, 7])
    ]
    cost = findings[0].measurements["gpu_hours_lost"]
    assert 0 < cost < 12 * 60 * 0.05 / 3600  # at most every GPU waiting the whole extra time


def test_one_slow_rank_is_named_with_its_host() -> None:
    findings = find_silent_failures(job({6: 1.4}, seed=1))
    assert [(f.failure_class, f.ranks, f.hosts) for f in findings] == [
        ("straggler", [6], ["node02"])
    ]
    assert findings[0].evidence[0].rank == 6


def test_when_half_the_ranks_are_slow_neither_half_is_an_outlier() -> None:
    # A known limit: peers' medians and MAD cannot single out half of the job.
    slow_half = {rank: 1.5 for rank in range(6, 12)}
    assert find_silent_failures(job(slow_half)) == []


def test_uniform_jitter_is_not_a_straggler() -> None:
    for seed in range(5):
        assert find_silent_failures(job({}, seed=seed)) == []


def interval_log(rank: int, slow_by: float, every: int, steps: int) -> str:
    # Megatron-LM's shape: one line every `every` iterations, its time the interval's average
    # per iteration (training.py's "elapsed time per iteration (ms)").
    lines = []
    for step in range(every, steps + 1, every):
        compute = 0.400 + 0.001 * (step * 7 % 13) + slow_by
        lines.append(
            f"2026-12-01 15:35:00,118 INFO train: rank {rank}: iter {step} | loss 2.0000 | "
            f"time/step {compute:.3f}s"
        )
    return "\n".join(lines) + "\n"


def test_the_cost_counts_every_step_a_line_stands_for_not_only_the_lines() -> None:
    # 8 ranks logging every 10 steps for 2,000 steps; rank 3 is 0.2 s slower on every step.
    # Every GPU of a synchronous job waits for it: 8 GPUs x 0.2 s x the steps after warm-up.
    found = []
    for rank in range(8):
        found += records(interval_log(rank, 0.2 if rank == 3 else 0.0, 10, 2000), f"rank{rank}.log")
    (finding,) = find_silent_failures(found)
    assert finding.ranks == [3]
    steady_steps = 2000 - 200  # the first tenth of the lines is warm-up, left out
    expected = steady_steps * 0.2 * 8 / 3600
    assert abs(finding.measurements["gpu_hours_lost"] - expected) / expected < 0.02
    assert finding.measurements["steps_counted"] == steady_steps


def test_a_long_runs_sampled_lines_still_cost_the_whole_run() -> None:
    # 6 ranks x 40,000 steps: the scan keeps a bounded sample of each rank's lines. Rank 2 is
    # 0.1 s slower on every step, so the job lost about 6 GPUs x 0.1 s x 40,000 steps.
    found, stride = [], 1
    for rank in range(6):
        name = f"rank{rank}.log"
        context = SourceContext(name=name, who=attribution_from_path(name), default_year=2026)
        reader = ProgressReader(ProgressScanner("re"), context)
        text = interval_log(rank, 0.1 if rank == 2 else 0.0, 1, 40_000)
        reader.read(Chunk(text.encode(), 0, 1, 0))
        found += reader.records()
        stride = max(stride, reader.stride)
    assert stride > 1, "the lines were sampled"
    (finding,) = find_silent_failures(found, stride)
    assert finding.ranks == [2]
    expected = 40_000 * 0.1 * 6 / 3600
    assert abs(finding.measurements["gpu_hours_lost"] - expected) / expected < 0.05
