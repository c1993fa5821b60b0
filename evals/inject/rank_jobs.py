"""Jobs whose logs state the originating rank only indirectly: a second script, new layouts.

    python -m evals.inject.rank_jobs --out evals/corpus                 # every job
    python -m evals.inject.rank_jobs --out /tmp/c --job ranks-two-node-sigkill

A different program from `worker.py`: data-parallel linear regression with hand-written
gradient all-reduce (no DDP), Python logging with the process id and no rank in the format, and
launch layouts the main scenarios do not use: two torchrun agents forming one job (node ranks,
local ranks that are not global ranks, one log per node), a plain launcher that starts one
process per rank with its output in `worker.<pid>.log`, and torch.multiprocessing with the
ranks' prints interleaved on one terminal. Each job injects one fault into one rank and is
labelled from what was injected, never from what denpex says. Labels are written before any
mechanism that reads them, and the cases go to `evals/corpus` through the same expected.json
contract (`expected.py`) and loudest-error labelling (`labels.py`) as the main scenarios.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

STEPS = 8
STEP_PAUSE_S = 0.5
GLOO_TIMEOUT_S = 12
SAFETY_S = 240
MARKER = "DENPEX_RANK_JOB"


@dataclass(frozen=True)
class Job:
    id: str
    failure_class: str
    layout: str
    """torchrun-2node | plain-pids | mp-spawn | torchrun-logdir"""
    world_size: int
    fault_rank: int
    fault_step: int
    fault: str
    """scan-before-first-step | sigkill | sigstop | broadcast-instead"""
    description: str


JOBS = (
    Job(
        "ranks-dataset-scan-absent",
        "collective_timeout",
        "torchrun-plain",
        4,
        0,
        0,
        "scan-before-first-step",
        "rank 0 is still scanning its dataset when its peers reach the first all_reduce; it "
        "prints nothing until then, and the peers time out",
    ),
    Job(
        "ranks-two-node-sigkill",
        "process_killed",
        "torchrun-2node",
        4,
        3,
        3,
        "sigkill",
        "two torchrun agents (node ranks 0 and 1, two local ranks each); global rank 3 (node 1, "
        "local rank 1) is SIGKILLed from outside mid-run",
    ),
    Job(
        "ranks-plain-launcher-sigkill-pid",
        "process_killed",
        "plain-pids",
        4,
        1,
        3,
        "sigkill",
        "a plain launcher starts one process per rank, each logging to worker.<pid>.log; rank 1 "
        "is SIGKILLed from outside and the launcher reports its pid",
    ),
    Job(
        "ranks-mp-sigstop-progress",
        "collective_timeout",
        "mp-spawn",
        4,
        2,
        3,
        "sigstop",
        "torch.multiprocessing ranks print their progress on one terminal; rank 2 is SIGSTOPped "
        "after step 3 and its peers time out in step 4's all_reduce",
    ),
    Job(
        "ranks-broadcast-instead-of-allreduce",
        "collective_mismatch",
        "torchrun-logdir",
        3,
        1,
        2,
        "broadcast-instead",
        "rank 1 broadcasts its gradient at step 2 where its peers all-reduce theirs",
    ),
)
BY_ID = {job.id: job for job in JOBS}


# --- the training program ----------------------------------------------------------------------


def _train(rank: int, world: int, job: Job) -> None:
    import torch
    import torch.distributed as dist

    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(process)d %(levelname)s %(message)s",
        stream=sys.stdout,
        force=True,
    )
    log = logging.getLogger("linreg")
    dist.init_process_group("gloo", timeout=dt.timedelta(seconds=GLOO_TIMEOUT_S))
    torch.manual_seed(rank)
    if job.fault == "scan-before-first-step" and rank == job.fault_rank:
        time.sleep(GLOO_TIMEOUT_S * 5)  # the shard index is rebuilt; nothing is printed
    features = torch.randn(256, 16)
    target = features @ torch.arange(16.0) + 0.1 * torch.randn(256)
    log.info("dataset ready: %d samples, world size %d", len(features), world)
    weights = torch.zeros(16, requires_grad=True)
    for step in range(STEPS):
        loss = ((features @ weights - target) ** 2).mean()
        loss.backward()
        grad = weights.grad.detach().clone()
        if job.fault == "broadcast-instead" and rank == job.fault_rank and step == job.fault_step:
            dist.broadcast(grad, src=rank)
        else:
            dist.all_reduce(grad)
        with torch.no_grad():
            weights -= 0.01 * grad / world
            weights.grad.zero_()
        log.info("step %d loss %.4f", step, loss.item())
        time.sleep(STEP_PAUSE_S)
    dist.barrier()
    log.info("done")
    dist.destroy_process_group()


def _mp_entry(rank: int, world: int, job_id: str, port: int) -> None:
    os.environ.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world)
    )
    _train(rank, world, BY_ID[job_id])


def worker_main(argv: list[str]) -> None:
    job = BY_ID[argv[0]]
    if job.layout == "mp-spawn":
        import torch.multiprocessing as mp

        mp.spawn(_mp_entry, args=(job.world_size, job.id, int(argv[1])), nprocs=job.world_size)
        return
    _train(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), job)


def plain_launcher_main(argv: list[str]) -> None:
    """A launcher of the simplest kind: one process per rank, output to worker.<pid>.log."""
    job, port, out = BY_ID[argv[0]], argv[1], Path(argv[2])
    procs = []
    for rank in range(job.world_size):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        env.update(RANK=str(rank), WORLD_SIZE=str(job.world_size), LOCAL_RANK=str(rank))
        pending = out / f"starting.{rank}"
        with pending.open("wb") as log:
            proc = subprocess.Popen(
                [sys.executable, __file__, "worker", job.id],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        pending.rename(out / f"worker.{proc.pid}.log")
        procs.append(proc)
        print(f"launcher: started worker pid {proc.pid}", flush=True)
    status = 0
    for proc in procs:
        code = proc.wait()
        how = f"signal {-code}" if code < 0 else f"exit code {code}"
        print(f"launcher: worker pid {proc.pid} finished with {how}", flush=True)
        status = status or (1 if code else 0)
    sys.exit(status)


# --- running a job ------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _torchrun(*args: str) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", *args]


def _pids_of_marker(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if f"{MARKER}={marker}".encode() in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def _rank_pid(marker: str, rank: int) -> int | None:
    """The process whose environment says RANK=rank (the worker, not its launcher)."""
    for pid in _pids_of_marker(marker):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        args = cmdline.split(b"\0")
        launcher = b"torch.distributed.run" in args or b"launch" in args
        if f"RANK={rank}".encode() in environ and not launcher and b"worker" in cmdline:
            return pid
    return None


def _mp_child_pid(marker: str, rank: int) -> int | None:
    """torch.multiprocessing starts rank r as its r-th spawned child (not the resource tracker)."""
    children = sorted(p for p in _pids_of_marker(marker) if b"spawn_main" in _cmdline(p))
    return children[rank] if len(children) > rank else None


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def run(job: Job, case_dir: Path) -> str:
    """Run the job and write its logs into case_dir; returns what happened."""
    marker = f"{job.id}-{os.getpid()}-{time.time_ns()}"
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    env[MARKER] = marker
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    case_dir.mkdir(parents=True, exist_ok=True)
    port = str(_free_port())
    me = str(Path(__file__).resolve())
    launches: list[tuple[list[str], Path]] = []
    if job.layout == "torchrun-plain":
        argv = _torchrun("--standalone", f"--nproc-per-node={job.world_size}", me, "worker", job.id)
        launches.append((argv, case_dir / "launcher.log"))
    elif job.layout == "torchrun-logdir":
        argv = _torchrun(
            "--standalone",
            f"--nproc-per-node={job.world_size}",
            "--log-dir",
            str(case_dir / "logs"),
            "--redirects",
            "3",
            me,
            "worker",
            job.id,
        )
        launches.append((argv, case_dir / "launcher.log"))
    elif job.layout == "torchrun-2node":
        per_node = job.world_size // 2
        for node in (0, 1):
            argv = _torchrun(
                "--nnodes=2",
                f"--nproc-per-node={per_node}",
                f"--node-rank={node}",
                "--rdzv-backend=static",
                "--master-addr=127.0.0.1",
                f"--master-port={port}",
                me,
                "worker",
                job.id,
            )
            (case_dir / f"node{node}").mkdir(exist_ok=True)
            launches.append((argv, case_dir / f"node{node}" / "torchrun.log"))
    elif job.layout == "plain-pids":
        argv = [sys.executable, me, "launch", job.id, port, str(case_dir)]
        launches.append((argv, case_dir / "launcher.log"))
    elif job.layout == "mp-spawn":
        launches.append(([sys.executable, me, "worker", job.id, port], case_dir / "launcher.log"))
    procs = []
    for argv, path in launches:
        out = path.open("wb")
        procs.append((subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT), out))
    deadline = time.monotonic() + SAFETY_S
    acted = job.fault not in ("sigkill", "sigstop")
    stopped: int | None = None
    what = "ran"
    while any(p.poll() is None for p, _ in procs):
        if time.monotonic() > deadline:
            what = "overran"
            break
        if not acted and _reached(job, case_dir):
            pid = _rank_pid(marker, job.fault_rank)
            if job.layout == "mp-spawn":
                pid = _mp_child_pid(marker, job.fault_rank)
            if pid is not None:
                os.kill(pid, signal.SIGKILL if job.fault == "sigkill" else signal.SIGSTOP)
                stopped = pid if job.fault == "sigstop" else None
                acted = True
                what = f"sent {job.fault} to pid {pid}"
        time.sleep(0.05)
    if stopped is not None:
        time.sleep(1.0)
    for pid in _pids_of_marker(marker):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for proc, out in procs:
        proc.wait()
        out.close()
    return what


def _reached(job: Job, case_dir: Path) -> bool:
    """Whether the faulty rank has logged the step the fault follows."""
    text = "".join(p.read_text(errors="replace") for p in case_dir.rglob("*.log") if p.is_file())
    return text.count(f"step {job.fault_step} loss") >= job.world_size


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "worker":
        worker_main(args[1:])
        return
    if args and args[0] == "launch":
        plain_launcher_main(args[1:])
        return
    parser = argparse.ArgumentParser(prog="python -m evals.inject.rank_jobs")
    parser.add_argument("--out", type=Path, default=Path("evals/corpus"))
    parser.add_argument("--job", action="append", choices=sorted(BY_ID))
    options = parser.parse_args(args)
    from evals.inject import expected

    for job in [BY_ID[j] for j in options.job] if options.job else JOBS:
        case_dir = options.out / f"inject-{job.id}"
        started = time.monotonic()
        what = run(job, case_dir)
        expected.write(
            case_dir,
            {
                "case": case_dir.name,
                "scenario": job.id,
                "expect_failure": True,
                "failure_class": job.failure_class,
                "category": expected.category_of(job.failure_class),
                "originating_rank": job.fault_rank,
                "misleading": False,
                "loudest_error": None,
                "launcher": {"mp-spawn": "torch.multiprocessing", "plain-pids": None}.get(
                    job.layout, "torchrun"
                ),
                "world_size": job.world_size,
                "seed": None,
                "simulated": [],
                "source": "generated by evals/inject/rank_jobs.py on torch 2.13.0+cpu (Gloo)",
                "notes": f"{job.description}. Fault rank {job.fault_rank}, fault step "
                f"{job.fault_step}; layout {job.layout}.",
            },
        )
        print(f"{job.id}: {what} in {time.monotonic() - started:.0f} s", flush=True)


if __name__ == "__main__":
    main()
