"""Replicas that must agree and do not: a suspicion with the odd rank, never a certainty."""

from __future__ import annotations

import random

from denpex.silent.detect import find_silent_failures
from tests.silent.helpers import records


def line(rank: int, step: int, loss: float, grad_norm: float) -> str:
    # evals/silent/train.py's line: the loss is all-reduced, the grad norm read after DDP's
    # all-reduce, so both are the same on every replica.
    return (
        f"[default{rank}]:2026-12-01 15:35:{step:02d},118 INFO train: rank {rank}: step {step} "
        f"loss {loss:.4f} grad_norm {grad_norm:.4f} lr 0.05 step_time 0.061 compute_time 0.031"
    )


def job(odd_step: int | None, local_losses: bool = False) -> str:
    noise = random.Random(1)
    lines = []
    for step in range(40):
        loss, grad_norm = 2.0 - 0.01 * step, 3.0 + noise.gauss(0, 0.2)
        for rank in range(4):
            value = grad_norm * (2**64 if step == odd_step and rank == 1 else 1)
            own = loss + noise.gauss(0, 0.05) if local_losses else loss
            lines.append(line(rank, step, own, value))
    return "\n".join(lines) + "\n"


def test_one_replica_whose_grad_norm_departs_from_the_others_is_suspected() -> None:
    findings = find_silent_failures(records(job(odd_step=25)))
    assert [f.failure_class for f in findings] == ["silent_data_corruption"]
    found = findings[0]
    assert (found.step, found.ranks, found.suspicion) == (25, [1], True)
    assert found.confidence < 0.5 and "not a certainty" in found.caveat
    assert found.evidence[0].rank == 1


def test_values_that_differ_on_every_step_are_not_ones_replicas_share() -> None:
    # Local (not all-reduced) losses differ from the first step: never a suspicion.
    assert find_silent_failures(records(job(odd_step=None, local_losses=True))) == []


def test_agreeing_replicas_raise_nothing() -> None:
    assert find_silent_failures(records(job(odd_step=None))) == []
