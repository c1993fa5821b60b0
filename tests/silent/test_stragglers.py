"""Stragglers: slower than the peers by robust statistics, with the host and the cost."""

from __future__ import annotations

import random

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
