"""Produce the hang eval cases: real multi-process PyTorch (Gloo) runs that hang, with dumps.

Usage (from the repository root; about two minutes on two cores):

    .venv/bin/python evals/hang/generate.py                 # every case
    .venv/bin/python evals/hang/generate.py --only stopped  # one case

Each case directory gets `dumps/fr_dump_<rank>` (pickle, as `_dump_fr_trace()` returns it),
`dumps_json/fr_dump_<rank>.json` (the same moment, `_dump_fr_trace_json()`), `logs/rank<r>.log`
(each rank's stdout and stderr), and `capture_times.json` (when each dump was taken, epoch
seconds, keyed by dump file name). `expected.json` is written by hand, not by this script.

How dumps are taken. Gloo has no watchdog, so nothing dumps on timeout by itself. Each rank runs
a watcher thread: when its own collective has been stuck for STUCK_S seconds it dumps and drops a
trigger file, and every rank that sees the trigger dumps too (NCCL's dump-on-timeout signals its
peers through the store the same way). A rank whose collective fails dumps in its error handler.
A SIGKILLed or SIGSTOPped rank cannot dump: its dump is missing, as in production.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
PG_TIMEOUT_S = 20
STUCK_S = 5.0
STEPS = 8
DEVIATE_AT = 5
CASE_DEADLINE_S = 240


@dataclass(frozen=True)
class Case:
    name: str
    world: int
    deviants: dict[int, str] = field(default_factory=dict)
    """rank -> what it does at step DEVIATE_AT instead of the all_reduce the others call."""
    subgroups: tuple[tuple[int, ...], ...] = ()
    """Extra groups; each step, after the default group's all_reduce, every rank all_reduces
    in its own subgroup (and `*_subgroup` deviations apply to that one)."""


CASES = {
    case.name: case
    for case in (
        Case("healthy", 4),
        Case("withheld_one", 4, {2: "withhold"}),
        Case("withheld_several", 6, {1: "withhold", 4: "withhold"}),
        Case("mismatch_op", 4, {3: "all_gather"}),
        Case("mismatch_op_rank0", 4, {0: "all_gather"}),
        Case("mismatch_size", 4, {1: "much_bigger"}),
        Case("mismatch_size_ahead", 4, {1: "smaller"}),
        Case("killed", 4, {2: "sigkill"}),
        Case("stopped", 4, {2: "sigstop"}),
        Case("withheld_subgroup", 4, {1: "withhold_subgroup"}, ((0, 1), (2, 3))),
        Case("skipped_subgroup", 4, {1: "skip_subgroup"}, ((0, 1), (2, 3))),
    )
}


# --- the worker: one rank ----------------------------------------------------------------------


class Recorder:
    """Dumps this rank's Flight Recorder once, from whichever thread gets there first."""

    def __init__(self, rank: int, case_dir: Path) -> None:
        self.rank = rank
        self.case_dir = case_dir
        self.trigger = case_dir / ".dump_requested"
        self.lock = threading.Lock()
        self.dumped = False
        self.in_collective_since: float | None = None

    def dump(self, why: str) -> None:
        import torch

        with self.lock:
            if self.dumped:
                return
            self.dumped = True
            pickled = torch._C._distributed_c10d._dump_fr_trace()
            as_json = torch._C._distributed_c10d._dump_fr_trace_json()
            captured = time.time()
            (self.case_dir / "dumps" / f"fr_dump_{self.rank}").write_bytes(pickled)
            (self.case_dir / "dumps_json" / f"fr_dump_{self.rank}.json").write_bytes(as_json)
            (self.case_dir / f".captured_{self.rank}").write_text(repr(captured))
            print(f"rank {self.rank}: flight recorder dumped ({why})", flush=True)

    def watch(self) -> None:
        while not self.dumped:
            since = self.in_collective_since
            if since is not None and time.monotonic() - since > STUCK_S:
                self.trigger.touch()
                self.dump(f"own collective stuck for more than {STUCK_S:.0f} s")
                return
            if self.trigger.exists():
                self.dump("a peer asked for dumps")
                return
            time.sleep(0.1)


def worker(case: Case, rank: int, case_dir: Path) -> int:
    import torch
    import torch.distributed as dist

    dist.init_process_group(
        "gloo", rank=rank, world_size=case.world, timeout=timedelta(seconds=PG_TIMEOUT_S)
    )
    # new_group is collective: every rank creates every group, in the same order.
    subgroups = [dist.new_group(list(members)) for members in case.subgroups]
    own = next((g for g, m in zip(subgroups, case.subgroups, strict=True) if rank in m), None)
    recorder = Recorder(rank, case_dir)
    threading.Thread(target=recorder.watch, daemon=True).start()
    tensor = torch.ones(4)
    deviation = case.deviants.get(rank) or ""
    try:
        for step in range(STEPS):
            deviating = step == DEVIATE_AT and deviation
            if deviating and not deviation.endswith("_subgroup"):
                deviate(deviation, rank, tensor, recorder)
            else:
                recorder.in_collective_since = time.monotonic()
                dist.all_reduce(tensor)
            recorder.in_collective_since = None
            if own is not None and deviating and deviation == "withhold_subgroup":
                deviate("withhold", rank, tensor, recorder)
            elif own is not None and deviating and deviation == "skip_subgroup":
                print(f"rank {rank}: step {step}: skips its subgroup's all_reduce", flush=True)
            elif own is not None:
                recorder.in_collective_since = time.monotonic()
                dist.all_reduce(tensor, group=own)
                recorder.in_collective_since = None
            if step == 0:
                # The first dump that resolves stack frames imports torch._dynamo (seconds of
                # CPU); pay it now, once a frame exists, not in the watcher during the hang.
                torch._C._distributed_c10d._dump_fr_trace()
        dist.barrier()
    except Exception as error:  # the failure under study: record it and dump, as NCCL does
        recorder.in_collective_since = None
        print(f"rank {rank}: collective failed: {error}", flush=True)
        recorder.dump("collective failed")
        return 1
    recorder.dump("run finished")
    dist.destroy_process_group()
    return 0


def deviate(deviation: str, rank: int, tensor: object, recorder: Recorder) -> None:
    import torch
    import torch.distributed as dist

    print(f"rank {rank}: step {DEVIATE_AT}: {deviation}", flush=True)
    if deviation == "withhold":
        # Stuck outside any collective (a data loader, a deadlock): alive, but never calls it.
        while not recorder.dumped:
            time.sleep(0.1)
        time.sleep(PG_TIMEOUT_S)
        print(f"rank {rank}: never called the collective; exiting", flush=True)
        os._exit(3)
    if deviation == "all_gather":
        recorder.in_collective_since = time.monotonic()
        dist.all_gather([torch.empty_like(tensor) for _ in range(dist.get_world_size())], tensor)
        return
    if deviation == "much_bigger":
        recorder.in_collective_since = time.monotonic()
        dist.all_reduce(torch.ones(4096))
        return
    if deviation == "smaller":
        recorder.in_collective_since = time.monotonic()
        dist.all_reduce(torch.ones(2))
        return
    if deviation == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    if deviation == "sigstop":
        os.kill(os.getpid(), signal.SIGSTOP)
    raise ValueError(f"unknown deviation {deviation}")


# --- the launcher: one case --------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _stopped(pid: int) -> bool:
    """Whether the process is stopped by a signal (state T in /proc/<pid>/stat)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "T"


def run_case(case: Case, out: Path) -> None:
    case_dir = out / case.name
    for sub in ("dumps", "dumps_json", "logs"):
        (case_dir / sub).mkdir(parents=True, exist_ok=True)
        for old in (case_dir / sub).iterdir():
            old.unlink()
    for stale in case_dir.glob(".*"):
        stale.unlink()
    env = {
        **os.environ,
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
        "WORLD_SIZE": str(case.world),
        "PYTHONUNBUFFERED": "1",
    }
    processes = []
    for rank in range(case.world):
        log = (case_dir / "logs" / f"rank{rank}.log").open("wb")
        command = [sys.executable, str(Path(__file__).resolve()), "--worker", case.name]
        command += ["--rank", str(rank), "--case-dir", str(case_dir)]
        processes.append(
            subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env=env | {"RANK": str(rank)}
            )
        )
    deadline = time.monotonic() + CASE_DEADLINE_S
    while time.monotonic() < deadline:
        running = [p for p in processes if p.poll() is None]
        # A SIGSTOPped rank never exits by itself; end it once every other rank has.
        if all(_stopped(p.pid) for p in running):
            break
        time.sleep(0.5)
    for process in processes:
        if process.poll() is None:
            process.kill()
            process.wait()
    captured = {}
    for rank in range(case.world):
        mark = case_dir / f".captured_{rank}"
        if mark.exists():
            captured[f"fr_dump_{rank}"] = float(mark.read_text())
            captured[f"fr_dump_{rank}.json"] = float(mark.read_text())
            mark.unlink()
    (case_dir / ".dump_requested").unlink(missing_ok=True)
    (case_dir / "capture_times.json").write_text(
        json.dumps(captured, indent=2, sort_keys=True) + "\n"
    )
    codes = [p.returncode for p in processes]
    print(f"{case.name}: exit codes {codes}, dumps from ranks {sorted(captured)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=sorted(CASES), default=None)
    parser.add_argument("--out", type=Path, default=HERE)
    parser.add_argument("--worker", choices=sorted(CASES), help=argparse.SUPPRESS)
    parser.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--case-dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        code = worker(CASES[args.worker], args.rank, args.case_dir)
        sys.stdout.flush()
        # A normal interpreter exit can block in Gloo's teardown after a failed collective.
        os._exit(code)
    for name in args.only or sorted(CASES):
        run_case(CASES[name], args.out)


if __name__ == "__main__":
    main()
