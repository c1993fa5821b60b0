"""One rank of an injected job: a small DDP training loop on Gloo that carries ONE fault.

Consumes the plan (`--plan run/plan.json`, written by the harness) and the rank environment
that torchrun or `evals.inject.mp_launch` sets (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT).
Produces what a real training script produces: Python logging on stderr, exceptions through
PyTorch's excepthook, checkpoints, Flight Recorder dumps after a stall. The rank's step and pid
go to small files under the run's `progress/` folder, which only the harness reads (to time the
signals it sends); nothing is printed for the harness's sake.

Faults that the harness injects from outside (SIGKILL, SIGSTOP, SIGTERM, a killed DataLoader
worker) need nothing here; the ones below live inside the script, as the bugs they imitate do.
"""

from __future__ import annotations

import argparse
import ctypes
import faulthandler
import logging
import os
import resource
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset

from evals.inject.flight_recorder import StallDumper
from evals.inject.plan import Plan

FEATURES, HIDDEN, CLASSES = 64, 128, 10
BATCH = 16
FRAMES = 4
# A rank whose shard holds long recordings: one batch is 16 MiB of shared memory.
LONG_FRAMES = 4096
LEAK_BYTES_PER_STEP = 256 * 2**20
# The rest of a real step's compute, so that steps last long enough to be interrupted mid-way.
STEP_COMPUTE_S = 0.4

log = logging.getLogger("train")


class Classifier(nn.Module):
    """Per-sample standardised features, an MLP body, a class head and an auxiliary head."""

    def __init__(self, hidden: int = HIDDEN) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(FEATURES, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU()
        )
        self.head = nn.Linear(hidden, CLASSES)
        self.aux_head = nn.Linear(hidden, 1)

    def forward(
        self, x: torch.Tensor, with_aux: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        if x.dim() == 3:  # (batch, features, frames): pool the frames
            x = x.mean(-1)
        x = (x - x.mean(1, keepdim=True)) / x.std(1, keepdim=True)
        hidden = self.body(x)
        aux = self.aux_head(hidden).squeeze(-1) if with_aux else None
        return self.head(hidden), aux


class SyntheticShard(Dataset):
    """This rank's shard: features and labels drawn from a generator seeded per sample."""

    def __init__(self, seed: int, rank: int, length: int, frames: int = FRAMES) -> None:
        self.seed, self.rank, self.length, self.frames = seed, rank, length, frames

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        generator = torch.Generator().manual_seed(
            self.seed * 1_000_003 + self.rank * 10_007 + index
        )
        x = torch.randn(FEATURES, self.frames, generator=generator)
        y = torch.randint(0, CLASSES, (), generator=generator)
        return x, y


class FileShard(Dataset):
    """This rank's shard on disk: one `torch.save`d sample per file, listed in a manifest."""

    def __init__(self, folder: Path, keep_open: bool = False) -> None:
        self.folder = folder
        self.names = (folder / "manifest.txt").read_text().split()
        # The leak the fd scenario carries: handles cached "for reuse" and never closed.
        self.keep_open = keep_open
        self.handles: list[object] = []

    def __len__(self) -> int:
        return len(self.names)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        path = self.folder / self.names[index]
        if self.keep_open:
            handle = path.open("rb")  # never closed: the leak this scenario imitates
            self.handles.append(handle)
            sample = torch.load(handle)
            handle.seek(0)
        else:
            sample = torch.load(path)
        return sample["x"], sample["y"]


class Rank:
    """What one rank knows about itself: its plan, rank, and where to report progress."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.rank = int(os.environ["RANK"])
        self.world_size = int(os.environ["WORLD_SIZE"])
        self.faulty = plan.fault_rank == self.rank
        self.prefix = f"rank {self.rank}: " if plan.log_rank_in_message else ""
        self.dumper: StallDumper | None = None

    def info(self, message: str, *args: object) -> None:
        log.info(self.prefix + message, *args)

    def warning(self, message: str, *args: object) -> None:
        log.warning(self.prefix + message, *args)

    def report(self, step: int) -> None:
        self._write_progress(f"rank{self.rank}", f"{step} {os.getpid()}")
        if self.dumper is not None:
            self.dumper.beat()

    def _write_progress(self, name: str, text: str) -> None:
        folder = self.plan.progress_dir
        partial = folder / f".{name}.{os.getpid()}"
        partial.write_text(text)
        partial.replace(folder / name)

    def at_fault(self, step: int) -> bool:
        return self.faulty and step == self.plan.fault_step


def _report_dataloader_worker(worker_id: int) -> None:
    """DataLoader `worker_init_fn`: tell the harness this worker's pid."""
    progress, rank = os.environ["DENPEX_PROGRESS_DIR"], os.environ["RANK"]
    Path(progress, f"rank{rank}.worker{worker_id}").write_text(str(os.getpid()))


def make_batches(me: Rank) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    plan = me.plan
    length = plan.steps * BATCH
    if plan.fault in {"missing_data_file", "corrupt_sample", "fd_leak"}:
        dataset: Dataset = FileShard(
            plan.data_dir / f"rank{me.rank}", keep_open=plan.fault == "fd_leak"
        )
    else:
        long = plan.fault == "shm_long_samples" and me.faulty
        dataset = SyntheticShard(plan.seed, me.rank, length, LONG_FRAMES if long else FRAMES)
    workers = plan.num_workers
    if plan.fault == "dataloader_worker_killed" and me.faulty:
        workers = max(workers, 2)
    os.environ["DENPEX_PROGRESS_DIR"] = str(plan.progress_dir)
    loader = DataLoader(
        dataset,
        batch_size=BATCH,
        num_workers=workers,
        worker_init_fn=_report_dataloader_worker if workers else None,
        persistent_workers=workers > 0,
    )
    while True:
        yield from loader


def build_model(me: Rank) -> nn.Module:
    if me.plan.fault == "module_missing":
        if not me.faulty:  # every other node's image has the package
            sys.path.insert(0, str(me.plan.site_dir))
        import fused_ops  # noqa: F401

    model = Classifier()
    if me.plan.fault == "checkpoint_mismatch" and me.rank == 0:
        # Rank 0 restores the weights; DDP's constructor broadcasts them to the others.
        resume = me.plan.checkpoint_dir / "resume.pt"
        me.info("resuming from %s", resume)
        model.load_state_dict(torch.load(resume)["model"])
    return model


def limit_process(me: Rank) -> None:
    """Resource limits that only the faulty rank's node enforces (a smaller ulimit)."""
    plan = me.plan
    if not me.faulty:
        return
    if plan.memory_limit_bytes is not None:
        status = Path("/proc/self/status").read_text()
        vm_size = int(status.split("VmSize:")[1].split()[0]) * 1024
        limit = vm_size + plan.memory_limit_bytes
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    if plan.open_files_limit is not None:
        open_now = len(list(Path("/proc/self/fd").iterdir()))
        limit = open_now + plan.open_files_limit
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))


def noisy_but_harmless(me: Rank, model: nn.Module) -> None:
    """Warnings real training scripts print every day without anything being wrong."""
    torch.amp.GradScaler("cuda")
    torch.tensor(next(model.parameters()).data[0])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.optim.lr_scheduler.StepLR(optimizer, step_size=1).step()
    me.warning("gradient clipping disabled: max_grad_norm is not set")


def corrupt_batch(me: Rank, step: int, x: torch.Tensor) -> torch.Tensor:
    fault = me.plan.fault
    if fault in {"nan_loss", "nan_grad_anomaly"} and me.at_fault(step):
        x = x.clone()
        x[3] = 0.5  # a constant sample: its standard deviation is 0
    if fault == "shape_mismatch" and me.at_fault(step):
        x = x[:, : FEATURES * 3 // 4]  # a shard written with an older feature set
    return x


def before_forward(me: Rank, step: int) -> None:
    fault, plan = me.plan.fault, me.plan
    if fault == "python_exception" and me.at_fault(step):
        grad_norms = torch.rand(4)
        me.info(f"grad norms {grad_norms:.3f}")
    if fault == "segfault" and me.at_fault(step):
        ctypes.string_at(0)  # a null-pointer read in native code
    if fault == "hang_in_step" and me.at_fault(step):
        time.sleep(plan.gloo_timeout_s * 4)  # blocked, alive, never reaching the collective


def slow_data(me: Rank, step: int) -> None:
    """The straggler's node reads its data ever more slowly until a collective times out."""
    if me.plan.fault == "straggler" and me.faulty and step >= me.plan.fault_step:
        time.sleep(0.3 * 2.5 ** (step - me.plan.fault_step))


def reduce_metrics(me: Rank, step: int, loss: torch.Tensor, correct: int) -> torch.Tensor:
    """The explicit all-reduce of loss and accuracy for logging (the scenarios' collectives)."""
    metrics = torch.stack([loss.detach(), torch.tensor(float(correct)), torch.tensor(1.0)])
    if me.plan.fault == "mismatch_size" and me.at_fault(step):
        metrics = torch.cat([metrics, torch.tensor([0.0])])  # an extra metric on one rank only
    if me.plan.fault == "mismatch_op" and me.at_fault(step):
        gathered = [torch.zeros_like(metrics) for _ in range(me.world_size)]
        dist.all_gather(gathered, metrics)
        return torch.stack(gathered).sum(0)
    dist.all_reduce(metrics)
    return metrics


def save_checkpoint(
    me: Rank, step: int, model: nn.Module, optimizer: torch.optim.Optimizer
) -> None:
    plan = me.plan
    if plan.checkpoint_step is None or step != plan.checkpoint_step or me.rank != 0:
        return
    path = plan.checkpoint_dir / f"step{step:06d}.pt"
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step}
    me.info("saving checkpoint to %s", path)
    if plan.checkpoint_to_file_object:
        with path.open("wb") as handle:
            torch.save(state, handle)
    else:
        torch.save(state, path)
    me.info("checkpoint saved")


def train(me: Rank) -> None:
    plan = me.plan
    me.report(-1)
    dist.init_process_group("gloo", timeout=timedelta(seconds=plan.gloo_timeout_s))
    if plan.detect_anomaly:
        torch.autograd.set_detect_anomaly(True)
    me.info("rank %d of %d ready (gloo, timeout %ds)", me.rank, me.world_size, plan.gloo_timeout_s)
    model = build_model(me)
    ddp = DistributedDataParallel(model)
    optimizer = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
    if plan.fault == "noisy_warnings":
        noisy_but_harmless(me, model)
    limit_process(me)
    if plan.flight_recorder:
        me.dumper = StallDumper(
            me.rank, plan.flight_recorder_dir, plan.dump_request_flag, plan.stall_dump_after_s
        )
        me.dumper.start()
    batches = make_batches(me)
    leaked: list[torch.Tensor] = []
    for step in range(plan.steps):
        me.report(step)
        started = time.monotonic()
        slow_data(me, step)
        x, y = next(batches)
        data_time = time.monotonic() - started
        if plan.fault == "skip_step" and me.at_fault(step):
            me.warning("step %d: batch has no valid samples, skipping", step)
            continue
        x = corrupt_batch(me, step, x)
        before_forward(me, step)
        # Every rank's batch at the fault step comes without auxiliary targets.
        with_aux = not (plan.fault == "ddp_unused_parameter" and step == plan.fault_step)
        logits, aux = ddp(x, with_aux=with_aux)
        loss = nn.functional.cross_entropy(logits, y)
        if aux is not None:
            loss = loss + 0.1 * nn.functional.mse_loss(aux, y.float() / CLASSES)
        if not plan.detect_anomaly and not torch.isfinite(loss):
            raise FloatingPointError(f"loss is {loss.item()} at step {step}")
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        time.sleep(STEP_COMPUTE_S)
        correct = int((logits.argmax(1) == y).sum())
        metrics = reduce_metrics(me, step, loss, correct)
        me.info(
            "step %d loss %.4f acc %.3f step_time %.2fs data_time %.2fs",
            step,
            metrics[0] / metrics[2],
            metrics[1] / (metrics[2] * BATCH),
            time.monotonic() - started,
            data_time,
        )
        save_checkpoint(me, step, model, optimizer)
        if plan.fault == "leak_memory" and me.faulty and step >= plan.fault_step:
            leaked.append(torch.ones(LEAK_BYTES_PER_STEP // 4))  # "kept for a debug dump"
    dist.barrier()
    me.info("training finished after %d steps", plan.steps)
    if me.dumper is not None:
        me.dumper.stop()
    dist.destroy_process_group()


def configure_logging() -> None:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )


def run(plan: Plan) -> None:
    """Entry point for a process whose rank environment is already set."""
    configure_logging()
    if plan.fault == "segfault":
        faulthandler.enable()
    train(Rank(plan))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--plan", type=Path, required=True)
    args = parser.parse_args(argv)
    run(Plan.load(args.plan))


if __name__ == "__main__":
    main()
