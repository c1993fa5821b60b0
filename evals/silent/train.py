"""One rank of a silent-failure case: a small DDP regression model on Gloo (CPU) that logs its
progress every step and, in its scenario, fails without raising an error.

Run by `python -m evals.silent` under torchrun. Scenarios (`--scenario`):
- healthy: random per-step jitter in compute time and noisy data, nothing wrong;
- straggler: rank `--rank-at-fault` computes `--slowdown` times slower every step (a
  throttled GPU stand-in);
- bitflip: at `--fault-step`, rank `--rank-at-fault` flips bit `--flip-bit` of one
  element of its gradient after the all-reduce (memory or compute corruption on one replica);
- lr-blowup: from `--fault-step` the learning rate is multiplied by `--lr-factor` (a schedule bug);
- scale-collapse: from `--fault-step` one layer's backward overflows on every step, and
  torch's own GradScaler halves the loss scale on each skipped step, printed DeepSpeed-style.
Every rank prints `rank R: step S loss L grad_norm G lr X step_time T compute_time C` with
Python logging; the loss is all-reduced (as most scripts do before printing), the grad norm is
the clipped total norm after DDP's all-reduce. With `--probe N`, `denpex.probe` logs per-layer
weight deltas and checksums every N steps.
"""

from __future__ import annotations

import argparse
import logging
import random
import struct
import time
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from denpex.probe import Probe, logging_writer


class OverflowAfter(torch.autograd.Function):
    """Identity forward; from the fault step on, its backward overflows (inf), as an fp16
    activation gradient does when it exceeds 65504."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, overflow: bool) -> torch.Tensor:  # type: ignore[override]
        ctx.overflow = overflow
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:  # type: ignore[override]
        return (grad * float("inf") if ctx.overflow else grad), None


def flip_bit(tensor: torch.Tensor, bit: int) -> None:
    """Flip one bit of the first element below 1 in magnitude: bit 30 multiplies it by 2^128
    (the grad norm shows it), bit 29 divides it by 2^64, mantissa bit 10 changes it by about
    2^-13 of itself (only checksums show those)."""
    flat = tensor.view(-1)
    index = int((flat.abs() < 1).nonzero()[0])
    (bits,) = struct.unpack("<I", struct.pack("<f", float(flat[index])))
    flat[index] = struct.unpack("<f", struct.pack("<I", bits ^ (1 << bit)))[0]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scenario", default="healthy")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--fault-step", type=int, default=30)
    parser.add_argument("--rank-at-fault", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--probe", type=int, default=0)
    parser.add_argument("--flip-bit", type=int, default=30)
    parser.add_argument("--slowdown", type=float, default=1.6)
    parser.add_argument("--lr-factor", type=float, default=30.0)
    args = parser.parse_args()

    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    log = logging.getLogger("train")
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)  # same initial weights on every replica
    model = nn.Sequential(
        nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1)
    )
    ddp = nn.parallel.DistributedDataParallel(model)
    base_lr = 0.05
    optimizer = torch.optim.SGD(ddp.parameters(), lr=base_lr, momentum=0.9)
    scaler = torch.amp.GradScaler("cpu", init_scale=65536.0, growth_interval=20)
    use_scaler = args.scenario == "scale-collapse"
    probe = (
        Probe(model, every=args.probe, rank=rank, write=logging_writer(log)) if args.probe else None
    )
    data = torch.Generator().manual_seed(args.seed * 100 + rank)
    jitter = random.Random(args.seed * 1000 + rank)
    truth = torch.randn(32, 1, generator=torch.Generator().manual_seed(7))
    for step in range(args.steps):
        started = time.perf_counter()
        fault = step >= args.fault_step
        lr = base_lr * (args.lr_factor if args.scenario == "lr-blowup" and fault else 1)
        for group in optimizer.param_groups:
            group["lr"] = lr
        x = torch.randn(64, 32, generator=data)
        y = x @ truth + 0.3 * torch.randn(64, 1, generator=data)
        compute = 0.02 + jitter.uniform(0.0, 0.02)
        if args.scenario == "straggler" and rank == args.rank_at_fault:
            compute *= args.slowdown
        time.sleep(compute)  # the rest of the model's forward and backward
        hidden = ddp(x)
        if use_scaler:
            hidden = OverflowAfter.apply(hidden, fault)
        loss = nn.functional.mse_loss(hidden, y)
        optimizer.zero_grad()
        compute_time = time.perf_counter() - started
        (scaler.scale(loss) if use_scaler else loss).backward()  # DDP all-reduces the gradients
        if args.scenario == "bitflip" and rank == args.rank_at_fault and step == args.fault_step:
            flip_bit(model[2].weight.grad, args.flip_bit)
        if use_scaler:
            scaler.unscale_(optimizer)
        grad_norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0).item()
        scale = None
        if use_scaler:
            attempted = scaler.get_scale()
            scaler.step(optimizer)
            scaler.update()
            scale = scaler.get_scale()  # printed after the update, as DeepSpeed and Megatron do
            if scale < attempted:
                log.info(
                    "[deepspeed] OVERFLOW! Rank %d Skipping step. Attempted loss scale: %d, "
                    "reducing to %d",
                    rank,
                    int(attempted),
                    int(scale),
                )
        else:
            optimizer.step()
        reduced = loss.detach().clone()
        dist.all_reduce(reduced)
        reduced /= world
        step_time = time.perf_counter() - started
        extra = f" loss_scale {scale:g}" if scale is not None else ""
        log.info(
            "rank %d: step %d loss %.4f grad_norm %.4f lr %g%s step_time %.3f compute_time %.3f",
            rank,
            step,
            reduced.item(),
            grad_norm,
            lr,
            extra,
            step_time,
            compute_time,
        )
        if probe is not None:
            probe.after_step(step)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
