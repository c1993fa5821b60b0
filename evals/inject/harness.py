"""Run one scenario for real and turn what it printed into a corpus case.

Consumes a `Scenario`, a base seed and the corpus directory; produces `Outcome` (written,
skipped with the reason, or rejected with the reason) and, when written, `<out>/inject-<id>/`:
the launcher's output (`launcher.log`), torchrun's per-rank log directory where the scenario uses
one, Flight Recorder dumps (`fr/`), the kernel's OOM report (`dmesg.log`), and `expected.json`.

A run is rejected, and nothing is written, when the fault did not happen as labelled: the job
exited 0 although a failure was injected (or failed although none was), the scenario's evidence
is absent from the output, the harness could not deliver its signal, or the run overran its
deadline; a fault in the harness itself is reported the same way. Whatever happens, every
process of the run is killed, its cgroup removed and its temporary directory deleted before
`run_scenario` returns.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import BinaryIO

import torch

from evals.inject import expected, isolation, kernel_log, labels
from evals.inject.plan import Plan
from evals.inject.scenarios import Action, Launcher, Need, Scenario, choose, originating_rank
from evals.inject.scenarios import resolve as resolve_plan
from evals.inject.trim import trim_healthy_runs
from evals.inject.worker import BATCH, Classifier

REPO = Path(__file__).resolve().parents[2]
CASE_PREFIX = "inject-"
# Slurm's KillWait: how long a job gets between SIGTERM and SIGKILL.
KILL_WAIT_S = 10.0
_POLL_S = 0.05
FINISHED = "training finished after"


class Status(StrEnum):
    WRITTEN = "written"
    SKIPPED = "skipped"
    REJECTED = "rejected"


@dataclass(frozen=True)
class Outcome:
    scenario: str
    status: Status
    reason: str
    elapsed_s: float


class Rejected(Exception):
    """The run did not produce the failure its labels describe."""


def unmet_need(scenario: Scenario) -> str | None:
    probes = {
        Need.MEMORY_CGROUP: isolation.probe_memory_cgroup,
        Need.MOUNT_NAMESPACE: isolation.probe_mount_namespace,
        Need.DROP_DAC_CAPABILITIES: isolation.probe_drop_capabilities,
    }
    for need in scenario.needs:
        if reason := probes[need]():
            return f"{need}: {reason}"
    return None


def run_scenario(
    scenario: Scenario, base_seed: int, out_dir: Path, keep_rejected: Path | None = None
) -> Outcome:
    """Run it and write its case; a rejected run's directory goes to `keep_rejected` if given."""
    started = time.monotonic()
    if reason := unmet_need(scenario):
        return Outcome(scenario.id, Status.SKIPPED, reason, 0.0)
    run_dir = Path(tempfile.mkdtemp(prefix=f"denpex-inject-{scenario.id}-"))
    marker = isolation.new_marker()
    try:
        status, reason = _run_and_write(scenario, base_seed, out_dir, run_dir, marker)
        if status is Status.REJECTED and keep_rejected is not None:
            kept = keep_rejected / run_dir.name
            shutil.copytree(run_dir, kept, symlinks=True, ignore_dangling_symlinks=True)
            reason += f" (run kept in {kept})"
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    return Outcome(scenario.id, status, reason, time.monotonic() - started)


def _run_and_write(
    scenario: Scenario, base_seed: int, out_dir: Path, run_dir: Path, marker: str
) -> tuple[Status, str]:
    try:
        plan = resolve_plan(scenario, base_seed, str(run_dir), _free_port())
        plan.dump(run_dir / "plan.json")
        _prepare(scenario, plan)
        run = _execute(scenario, plan, marker)
        _write_case(scenario, plan, run, base_seed, out_dir)
        status, reason = Status.WRITTEN, run.summary
    except Rejected as rejection:
        status, reason = Status.REJECTED, str(rejection)
    except Exception as error:  # a harness fault must not stop the other scenarios
        status, reason = Status.REJECTED, f"harness error: {type(error).__name__}: {error}"
    finally:
        leftovers = isolation.reap(marker)
    if leftovers:
        return Status.REJECTED, f"processes {leftovers} survived cleanup"
    return status, reason


# --- preparing the run directory ---------------------------------------------------------------


def _prepare(scenario: Scenario, plan: Plan) -> None:
    for folder in (plan.progress_dir, plan.checkpoint_dir, plan.data_dir):
        folder.mkdir(parents=True)
    if plan.fault in {"missing_data_file", "corrupt_sample", "fd_leak"}:
        _write_sample_files(plan)
    if plan.fault == "checkpoint_mismatch":
        older = Classifier(hidden=96)  # the run that wrote it used a smaller hidden size
        torch.save({"model": older.state_dict(), "step": 1200}, plan.checkpoint_dir / "resume.pt")
    if plan.fault == "module_missing":
        package = plan.site_dir / "fused_ops"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text(
            '"""Fused kernels installed on the healthy nodes."""\n'
        )
    if owner := scenario.plan_options.get("checkpoint_dir_owner"):
        os.chown(plan.checkpoint_dir, owner, owner)
        plan.checkpoint_dir.chmod(0o755)


def _write_sample_files(plan: Plan) -> None:
    generator = torch.Generator().manual_seed(plan.seed)
    bad_index = plan.fault_step * BATCH + 5
    for rank in range(plan.world_size):
        folder = plan.data_dir / f"rank{rank}"
        folder.mkdir()
        names = [f"sample-{index:05d}.pt" for index in range(plan.steps * BATCH)]
        for name in names:
            sample = {"x": torch.randn(64, 4, generator=generator), "y": torch.tensor(1)}
            torch.save(sample, folder / name)
        (folder / "manifest.txt").write_text("\n".join(names) + "\n")
        if rank != plan.fault_rank:
            continue
        bad = folder / names[bad_index]
        if plan.fault == "missing_data_file":
            bad.unlink()
        elif plan.fault == "corrupt_sample":
            bad.write_bytes(bad.read_bytes()[: bad.stat().st_size // 2])


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --- launching ---------------------------------------------------------------------------------


def _launcher_argv(scenario: Scenario, plan: Plan) -> list[str]:
    plan_path = str(Path(plan.run_dir) / "plan.json")
    if scenario.launcher is Launcher.MULTIPROCESSING:
        return [sys.executable, "-m", "evals.inject.mp_launch", "--plan", plan_path]
    nodes, node_rank = 1, 0
    if (node := scenario.plan_options.get("torchrun_as_node")) is not None:
        nodes, node_rank = 2, node
    argv = [sys.executable, "-m", "torch.distributed.run", "--nnodes", str(nodes)]
    argv += ["--node-rank", str(node_rank), "--nproc-per-node", str(plan.world_size // nodes)]
    argv += ["--master-addr", "127.0.0.1", "--master-port", str(plan.master_port)]
    if nodes > 1:
        argv += ["--rdzv-conf", "timeout=15"]
    if scenario.launcher is Launcher.TORCHRUN_LOGDIR:
        argv += ["--log-dir", str(Path(plan.run_dir) / "logs"), "--redirects", "3", "--tee", "3"]
    return [*argv, "-m", "evals.inject.worker", "--plan", plan_path]


def _job_env(marker: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"}
    }
    env["PYTHONPATH"] = str(REPO)
    env[isolation.RUN_MARKER_ENV] = marker
    return env


@dataclass
class Run:
    exit_code: int
    pids: dict[int, int]  # rank -> pid, as the ranks reported them
    simulated: list[str]
    kernel_lines: list[str]
    summary: str


def _execute(scenario: Scenario, plan: Plan, marker: str) -> Run:
    launcher_log = Path(plan.run_dir) / "launcher.log"
    with contextlib.ExitStack() as stack:
        prefix, cgroup = _isolation(scenario, plan, stack)
        if scenario.action is Action.BLOCK_MASTER_PORT:
            stack.enter_context(_listening_on(plan.master_port))
        argv = prefix + _launcher_argv(scenario, plan)
        out = stack.enter_context(launcher_log.open("ab", buffering=0))
        process = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=_job_env(marker),
            cwd=plan.run_dir,
            start_new_session=True,
        )
        deadline = time.monotonic() + scenario.max_runtime_s
        try:
            simulated = _act(scenario, plan, process, marker, out, deadline)
            exit_code = _wait(process, deadline, scenario)
        finally:
            isolation.reap(marker)
        pids = _reported_pids(plan)
        kernel_lines = _kernel_report(cgroup, plan, pids) if cgroup else []
    expected_nonzero = scenario.expect_failure
    if (exit_code != 0) != expected_nonzero:
        raise Rejected(
            f"launcher exited {exit_code}, expected {'failure' if expected_nonzero else 0}"
        )
    return Run(exit_code, pids, simulated, kernel_lines, f"launcher exited {exit_code}")


def _isolation(
    scenario: Scenario, plan: Plan, stack: contextlib.ExitStack
) -> tuple[list[str], isolation.MemoryCgroup | None]:
    prefix: list[str] = []
    cgroup = None
    if limit := scenario.plan_options.get("job_memory_limit_bytes"):
        isolation.remove_stale_cgroups()
        name = f"{scenario.id}-{uuid.uuid4().hex[:8]}"
        cgroup = stack.enter_context(isolation.MemoryCgroup(name, limit))
        prefix += cgroup.argv()
    mounts = []
    if size := scenario.plan_options.get("shm_bytes"):
        mounts.append(isolation.TmpfsMount(Path("/dev/shm"), size))
    if size := scenario.plan_options.get("checkpoint_bytes"):
        mounts.append(isolation.TmpfsMount(plan.checkpoint_dir, size))
    if mounts:
        prefix += isolation.mount_namespace_argv(mounts)
    if Need.DROP_DAC_CAPABILITIES in scenario.needs:
        prefix += isolation.drop_dac_capabilities_argv()
    return prefix, cgroup


@contextlib.contextmanager
def _listening_on(port: int) -> Iterator[None]:
    with socket.socket() as squatter:
        squatter.bind(("", port))
        squatter.listen()
        yield


def _wait(process: subprocess.Popen[bytes], deadline: float, scenario: Scenario) -> int:
    remaining = deadline - time.monotonic()
    try:
        return process.wait(timeout=max(remaining, 0.1))
    except subprocess.TimeoutExpired:
        raise Rejected(f"the job was still running after {scenario.max_runtime_s} s") from None


# --- acting on the job from outside -----------------------------------------------------------


def _act(
    scenario: Scenario,
    plan: Plan,
    process: subprocess.Popen[bytes],
    marker: str,
    out: BinaryIO,
    deadline: float,
) -> list[str]:
    """Deliver the scenario's external fault; return the lines the harness wrote into the log."""
    action = scenario.action
    if action in {Action.NONE, Action.BLOCK_MASTER_PORT}:
        return []
    watched_rank = 0 if action is Action.TERMINATE_JOB else plan.fault_rank
    assert watched_rank is not None
    pid = _wait_for_step(plan, watched_rank, plan.fault_step, process, deadline)
    time.sleep(0.15)  # into the step, not at its boundary
    if action is Action.TERMINATE_JOB:
        return _terminate_job(scenario, plan, marker, out)
    try:
        if action is Action.KILL_RANK:
            os.kill(pid, signal.SIGKILL)
        elif action is Action.STOP_RANK:
            os.kill(pid, signal.SIGSTOP)
        elif action is Action.KILL_DATALOADER_WORKER:
            worker = plan.progress_dir / f"rank{watched_rank}.worker0"
            os.kill(int(worker.read_text()), signal.SIGKILL)
    except (ProcessLookupError, FileNotFoundError, ValueError) as error:
        raise Rejected(f"could not signal rank {watched_rank}'s process: {error}") from None
    return []


def _wait_for_step(
    plan: Plan, rank: int, step: int, process: subprocess.Popen[bytes], deadline: float
) -> int:
    progress = plan.progress_dir / f"rank{rank}"
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise Rejected(f"the job exited before rank {rank} reached step {step}")
        with contextlib.suppress(FileNotFoundError, ValueError):
            reached, pid = (int(v) for v in progress.read_text().split())
            if reached >= step:
                return pid
        time.sleep(_POLL_S)
    raise Rejected(f"rank {rank} did not reach step {step} in time")


def slurm_cancel_line(job_id: int, node: str, when: datetime, reason: str, step: bool) -> str:
    """slurmstepd's cancellation line (src/slurmd/slurmstepd/req.c), for the simulated events."""
    entity = f"STEP {job_id}.0" if step else f"JOB {job_id}"
    due = f" DUE TO {reason}" if reason else ""
    return (
        f"slurmstepd: error: *** {entity} ON {node} CANCELLED AT {when:%Y-%m-%dT%H:%M:%S}{due} ***"
    )


def _terminate_job(scenario: Scenario, plan: Plan, marker: str, out: BinaryIO) -> list[str]:
    reason = scenario.slurm_reason or ""
    job_id = 100_000 + plan.seed
    line = slurm_cancel_line(
        job_id, socket.gethostname(), datetime.now(), reason, step=reason != "TIME LIMIT"
    )
    out.write(line.encode() + b"\n")
    isolation.signal_run(marker, signal.SIGTERM)
    end = time.monotonic() + KILL_WAIT_S
    while time.monotonic() < end and isolation.processes_of_run(marker):
        time.sleep(0.2)
    isolation.signal_run(marker, signal.SIGKILL)
    return [line]


# --- after the run ----------------------------------------------------------------------------


def _reported_pids(plan: Plan) -> dict[int, int]:
    pids = {}
    for rank in range(plan.world_size):
        with contextlib.suppress(FileNotFoundError, ValueError):
            pids[rank] = int((plan.progress_dir / f"rank{rank}").read_text().split()[1])
    return pids


def _kernel_report(cgroup: isolation.MemoryCgroup, plan: Plan, pids: dict[int, int]) -> list[str]:
    dmesg = subprocess.run(["dmesg", "-T"], capture_output=True, check=True)
    lines = dmesg.stdout.decode(errors="replace").splitlines()
    report = kernel_log.oom_reports(lines, cgroup.name)
    killed = kernel_log.killed_pids(report)
    expected_pid = pids.get(plan.fault_rank) if plan.fault_rank is not None else None
    if killed != [expected_pid]:
        raise Rejected(f"the OOM killer killed {killed}, not the faulty rank's pid {expected_pid}")
    return report


def _read_text(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="surrogateescape")


def _collect(plan: Plan, run: Run, case_dir: Path) -> tuple[dict[str, str], list[str]]:
    """Copy what the run produced into the case; return its texts and the trimming notes."""
    run_dir = Path(plan.run_dir)
    texts: dict[str, str] = {}
    trimmed: list[str] = []
    sources = [run_dir / "launcher.log", *sorted((run_dir / "logs").rglob("*.log"))]
    for source in sources:
        if not source.is_file():
            continue
        relative = source.relative_to(run_dir).as_posix()
        result = trim_healthy_runs(_read_text(source))
        if result.removed:
            trimmed.append(f"{relative}: {result.removed}")
        _write_bytes(case_dir / relative, result.text.encode("utf-8", errors="surrogateescape"))
        texts[relative] = result.text
    if run.kernel_lines:
        text = "\n".join(run.kernel_lines) + "\n"
        _write_bytes(case_dir / "dmesg.log", text.encode())
        texts["dmesg.log"] = text
    for dump in sorted(plan.flight_recorder_dir.rglob("*")):
        if dump.is_file() and ".partial-" not in dump.name:
            _write_bytes(case_dir / dump.relative_to(run_dir), dump.read_bytes())
    return texts, trimmed


def _write_bytes(path: Path, payload: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(payload)


def _write_case(scenario: Scenario, plan: Plan, run: Run, base_seed: int, out_dir: Path) -> None:
    case = CASE_PREFIX + scenario.id
    staging = out_dir / f".{case}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        texts, trimmed = _collect(plan, run, staging)
        everything = "\n".join(texts.values())
        if not re.search(scenario.evidence, everything):
            raise Rejected(f"evidence /{scenario.evidence}/ is not in the captured output")
        if scenario.expect_failure and FINISHED in everything:
            raise Rejected("a rank finished training: the fault came too late")
        resolved = choose(scenario, base_seed)
        origin = originating_rank(scenario, resolved)
        loudest = labels.loudest_error(texts)
        expected.write(
            staging,
            {
                "case": case,
                "scenario": scenario.id,
                "expect_failure": scenario.expect_failure,
                "failure_class": scenario.failure_class,
                "category": expected.category_of(scenario.failure_class),
                "originating_rank": origin,
                "misleading": labels.is_misleading(
                    loudest, scenario.expect_failure, scenario.failure_class, origin
                ),
                "loudest_error": loudest.describe() if loudest else None,
                "launcher": scenario.launcher.label,
                "world_size": plan.world_size,
                "seed": plan.seed,
                "simulated": run.simulated,
                "source": f"generated by evals/inject on torch {torch.__version__} (Gloo)",
                "notes": _notes(scenario, plan, trimmed),
            },
        )
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    final = out_dir / case
    shutil.rmtree(final, ignore_errors=True)
    staging.rename(final)


def _notes(scenario: Scenario, plan: Plan, trimmed: list[str]) -> str:
    parts = [scenario.notes]
    shape = f"World size {plan.world_size}"
    if plan.fault_rank is not None:
        shape += f", faulty rank {plan.fault_rank}, fault step {plan.fault_step}"
    elif scenario.action is Action.TERMINATE_JOB:
        shape += f", signalled at step {plan.fault_step}"
    parts.append(shape + ".")
    if scenario.launcher is Launcher.TORCHRUN_LOGDIR:
        parts.append("Single node: torchrun's local ranks (logs/.../attempt_0/<n>/) are the ranks.")
    if trimmed:
        parts.append("Healthy step lines trimmed (line counts): " + "; ".join(trimmed) + ".")
    return " ".join(parts)
