"""The scenarios: one injected fault each, with the ground truth it produces.

Consumes nothing; produces the `SCENARIOS` registry and `resolve`, which turns a scenario and a
base seed into a `Plan` (world size, faulty rank, fault step) deterministically. A scenario's
labels follow from the scenario and the seed alone, never from the run's output, so regenerating
the corpus reproduces them exactly; only `loudest_error` and `misleading` are read from the
captured text afterwards (see `labels.py`).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from evals.inject.plan import Plan


class Launcher(StrEnum):
    TORCHRUN_LOGDIR = "torchrun-logdir"  # --log-dir --redirects 3 --tee 3
    TORCHRUN = "torchrun"  # ranks write straight to the launcher's stdout and stderr
    MULTIPROCESSING = "torch.multiprocessing"

    @property
    def label(self) -> str:
        """The launcher as expected.json names it."""
        return "torch.multiprocessing" if self is Launcher.MULTIPROCESSING else "torchrun"


class Action(StrEnum):
    """What the harness does to the running job from outside."""

    NONE = "none"
    KILL_RANK = "kill-rank"  # SIGKILL to the faulty rank
    STOP_RANK = "stop-rank"  # SIGSTOP to the faulty rank
    KILL_DATALOADER_WORKER = "kill-dataloader-worker"  # SIGKILL to one of its workers
    TERMINATE_JOB = "terminate-job"  # a scheduler's SIGTERM to every process of the job
    BLOCK_MASTER_PORT = "block-master-port"  # something else already listens on MASTER_PORT


class Need(StrEnum):
    """Privileges a scenario cannot run without; missing ones make it skip with the reason."""

    MEMORY_CGROUP = "memory-cgroup"
    MOUNT_NAMESPACE = "mount-namespace"
    DROP_DAC_CAPABILITIES = "drop-dac-capabilities"


class RankChoice(StrEnum):
    ANY = "any"
    NONZERO = "nonzero"  # rank 0 is where a naive reader looks first: hide the fault elsewhere
    ZERO = "zero"  # the pattern itself runs on rank 0 (it alone loads or saves checkpoints)


@dataclass(frozen=True)
class Scenario:
    id: str
    summary: str
    failure_class: str | None
    launcher: Launcher
    notes: str
    # A regular expression the captured text must contain, or the run is rejected: proof that
    # the fault really happened the way the labels say.
    evidence: str
    fault: str = "none"
    action: Action = Action.NONE
    # Whether the faulty rank is where the failure began; False for whole-job events.
    rank_originates: bool = True
    rank_choice: RankChoice = RankChoice.ANY
    needs: tuple[Need, ...] = ()
    flight_recorder: bool = False
    world_sizes: tuple[int, ...] = (4, 4, 5, 6)
    fault_steps: tuple[int, ...] = (2, 3, 4)
    steps_after_fault: int = 3
    gloo_timeout_s: int = 15
    # For TERMINATE_JOB: the slurmstepd reason ("PREEMPTION", "TIME LIMIT"), or "" for scancel.
    slurm_reason: str | None = None
    plan_options: dict[str, Any] = field(default_factory=dict)
    # A safety net only: the slowest scenarios take about 100 s on a busy 2-core machine.
    max_runtime_s: int = 300

    @property
    def expect_failure(self) -> bool:
        return self.failure_class is not None


_HANG_NOTE = (
    "Gloo has no watchdog: each rank dumps its Flight Recorder buffer from a background thread "
    "once training has made no progress for a while (before the collective times out) and asks "
    "its peers to dump too."
)

SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        id="clean",
        summary="a healthy run that finishes",
        failure_class=None,
        launcher=Launcher.TORCHRUN_LOGDIR,
        rank_originates=False,
        evidence=r"training finished after \d+ steps",
        fault_steps=(5,),
        notes="No fault. Every rank finishes and torchrun exits 0.",
    ),
    Scenario(
        id="clean-noisy-warnings",
        summary="a healthy run that prints harmless warnings",
        failure_class=None,
        launcher=Launcher.MULTIPROCESSING,
        fault="noisy_warnings",
        rank_originates=False,
        evidence=r"GradScaler is enabled, but CUDA is not available",
        fault_steps=(5,),
        plan_options={"num_workers": 3},
        notes=(
            "No fault. Every rank prints real PyTorch warnings (GradScaler without CUDA, tensor "
            "copy-construct, lr_scheduler order, DataLoader worker count above the CPU count) "
            "and a script warning about gradient clipping; all ranks finish."
        ),
    ),
    Scenario(
        id="sigkill-rank",
        summary="one rank SIGKILLed mid-step from outside",
        failure_class="process_killed",
        launcher=Launcher.TORCHRUN_LOGDIR,
        action=Action.KILL_RANK,
        rank_choice=RankChoice.NONZERO,
        evidence=r"Signal 9 \(SIGKILL\)|exitcode\s*: -9",
        notes=(
            "The harness sends SIGKILL to the faulty rank once it reports the fault step; no OOM, "
            "scheduler or hardware record exists. Its peers see the connection close."
        ),
    ),
    Scenario(
        id="sigkill-rank-mp",
        summary="one rank SIGKILLed mid-step, torch.multiprocessing launch",
        failure_class="process_killed",
        launcher=Launcher.MULTIPROCESSING,
        action=Action.KILL_RANK,
        evidence=r"terminated with signal SIGKILL",
        notes=(
            "The harness sends SIGKILL to the faulty rank; torch.multiprocessing.spawn reports the "
            "process index, which equals the rank here."
        ),
    ),
    Scenario(
        id="sigstop-rank-hang",
        summary="one rank SIGSTOPped: its peers time out in the collective",
        failure_class="collective_timeout",
        launcher=Launcher.TORCHRUN_LOGDIR,
        action=Action.STOP_RANK,
        rank_choice=RankChoice.NONZERO,
        flight_recorder=True,
        evidence=r"Timed out waiting \d+ms",
        notes=(
            "The harness SIGSTOPs the faulty rank; the others block in the gradient all-reduce "
            "until Gloo's timeout. The stopped rank prints nothing and writes no Flight Recorder "
            "dump; torchrun SIGKILLs it after its SIGTERM grace period. " + _HANG_NOTE
        ),
    ),
    Scenario(
        id="skip-step-collective",
        summary="one rank skips a training step and with it every collective of that step",
        failure_class="collective_mismatch",
        launcher=Launcher.TORCHRUN_LOGDIR,
        fault="skip_step",
        rank_choice=RankChoice.NONZERO,
        flight_recorder=True,
        evidence=r"batch has no valid samples, skipping",
        notes=(
            "At the fault step the faulty rank logs that its batch has no valid samples and "
            "`continue`s, skipping the DDP gradient all-reduce and the metrics all-reduce its "
            "peers are issuing: from then on the ranks' collective sequences disagree. "
            + _HANG_NOTE
        ),
    ),
    Scenario(
        id="mismatched-collective-op",
        summary="one rank calls all_gather while its peers call all_reduce",
        failure_class="collective_mismatch",
        launcher=Launcher.TORCHRUN,
        fault="mismatch_op",
        flight_recorder=True,
        evidence=r"Timed out waiting \d+ms|Connection closed by peer",
        plan_options={"log_rank_in_message": True},
        notes=(
            "At the fault step the faulty rank gathers its metrics with all_gather where every "
            "other rank all-reduces them. Gloo does not detect the mismatch; the job hangs until "
            "the timeout. " + _HANG_NOTE
        ),
    ),
    Scenario(
        id="mismatched-collective-size",
        summary="one rank all-reduces a tensor of a different size",
        failure_class="collective_mismatch",
        launcher=Launcher.TORCHRUN_LOGDIR,
        fault="mismatch_size",
        flight_recorder=True,
        evidence=r"size doesn't match|Timed out waiting|Connection closed by peer",
        notes=(
            "At the fault step the faulty rank all-reduces 4 metrics where its peers reduce 3. "
            "Gloo aborts whichever rank first receives the wrong size, usually an innocent one. "
            + _HANG_NOTE
        ),
    ),
    Scenario(
        id="exception-while-peers-wait",
        summary="an uncaught exception on one rank while the others wait in all_reduce",
        failure_class="python_exception",
        launcher=Launcher.MULTIPROCESSING,
        fault="python_exception",
        rank_choice=RankChoice.NONZERO,
        evidence=r"TypeError: unsupported format string passed to Tensor.__format__",
        plan_options={"log_rank_in_message": True},
        notes=(
            "A logging statement formats a multi-element tensor with `:.3f` on the faulty rank "
            "only; the TypeError kills it while its peers wait in the gradient all-reduce."
        ),
    ),
    Scenario(
        id="host-oom-cgroup",
        summary="one rank leaks host memory until the cgroup OOM killer kills it",
        failure_class="host_oom",
        launcher=Launcher.TORCHRUN_LOGDIR,
        fault="leak_memory",
        needs=(Need.MEMORY_CGROUP,),
        evidence=r"Memory cgroup out of memory: Killed process",
        fault_steps=(2, 3),
        steps_after_fault=12,
        world_sizes=(4,),
        plan_options={"job_memory_limit_bytes": 3 * 2**30},
        notes=(
            "The whole job runs in a cgroup v1 memory cgroup limited to 3 GiB, as a Slurm job's "
            "step cgroup is. From the fault step on, the faulty rank keeps 256 MiB per step "
            "alive; the kernel's OOM killer kills it (SIGKILL). dmesg.log holds the kernel's OOM "
            "report for this cgroup, captured with `dmesg -T` right after the run."
        ),
    ),
    Scenario(
        id="host-oom-allocation-failure",
        summary="one rank cannot allocate host memory (address-space limit)",
        failure_class="host_oom",
        launcher=Launcher.TORCHRUN,
        fault="leak_memory",
        evidence=r"DefaultCPUAllocator: can't allocate memory",
        steps_after_fault=8,
        plan_options={"memory_limit_bytes": 600 * 2**20, "log_rank_in_message": True},
        notes=(
            "The faulty rank runs under RLIMIT_AS (its virtual size at start plus 600 MiB, as a "
            "`ulimit -v` on its node would impose) and leaks 256 MiB per step from the fault "
            "step on; PyTorch's CPU allocator fails and the rank dies with the RuntimeError."
        ),
    ),
    Scenario(
        id="nan-loss",
        summary="the script's own check finds a NaN loss on one rank",
        failure_class="nan_or_inf",
        launcher=Launcher.TORCHRUN_LOGDIR,
        fault="nan_loss",
        evidence=r"FloatingPointError: loss is nan",
        notes=(
            "A constant sample in the faulty rank's batch has zero standard deviation, so the "
            "per-sample standardisation yields NaN; the script's `isfinite` check raises before "
            "backward while the other ranks wait in the gradient all-reduce."
        ),
    ),
    Scenario(
        id="nan-grad-anomaly",
        summary="autograd anomaly detection reports NaN in backward on one rank",
        failure_class="nan_or_inf",
        launcher=Launcher.MULTIPROCESSING,
        fault="nan_grad_anomaly",
        evidence=r"returned nan values in its \d+th output",
        plan_options={"detect_anomaly": True, "log_rank_in_message": True},
        notes=(
            "Same NaN source as nan-loss, but the script runs with "
            "torch.autograd.set_detect_anomaly(True) and no loss check: backward on the faulty "
            "rank raises 'Function ... returned nan values'."
        ),
    ),
    Scenario(
        id="dataloader-worker-killed",
        summary="a DataLoader worker of one rank is SIGKILLed",
        failure_class="dataloader_worker_died",
        launcher=Launcher.TORCHRUN_LOGDIR,
        fault="dataloader_worker_killed",
        action=Action.KILL_DATALOADER_WORKER,
        evidence=r"DataLoader worker \(pid\(?s?\)? ?\d+\) "
        r"(?:is killed by signal|exited unexpectedly)",
        plan_options={"num_workers": 0},
        notes=(
            "The faulty rank loads with 2 persistent DataLoader workers; the harness SIGKILLs "
            "one of them at the fault step. The rank's main process raises the DataLoader's "
            "RuntimeError; its peers see the connection close."
        ),
    ),
    Scenario(
        id="dataloader-worker-corrupt-sample",
        summary="a truncated sample file raises inside a DataLoader worker",
        failure_class="corrupt_or_missing_data",
        launcher=Launcher.TORCHRUN,
        fault="corrupt_sample",
        evidence=r"Caught RuntimeError in DataLoader worker process",
        plan_options={"num_workers": 2, "log_rank_in_message": True},
        notes=(
            "Every rank reads one torch.save'd file per sample through 2 DataLoader workers; one "
            "file of the faulty rank's shard is truncated to half its size. torch.load fails in "
            "the worker and the DataLoader re-raises it in the rank's main process."
        ),
    ),
    Scenario(
        id="dataloader-shm-exhausted",
        summary="DataLoader workers of one rank run out of /dev/shm",
        failure_class="shm_exhausted",
        launcher=Launcher.TORCHRUN_LOGDIR,
        fault="shm_long_samples",
        needs=(Need.MOUNT_NAMESPACE,),
        evidence=r"unable to allocate shared memory|insufficient shared memory|Bus error",
        plan_options={"num_workers": 2, "shm_bytes": 8 * 2**20},
        notes=(
            "The job runs in a private mount namespace whose /dev/shm is an 8 MiB tmpfs (a "
            "container's default is 64 MiB). Every rank loads through 2 DataLoader workers; the "
            "faulty rank's shard holds long recordings (16 MiB per batch), so its workers cannot "
            "place a batch in shared memory. It fails from the first step regardless of the "
            "nominal fault step."
        ),
    ),
    Scenario(
        id="rendezvous-port-busy",
        summary="MASTER_PORT is already taken by another process",
        failure_class="rendezvous_failure",
        launcher=Launcher.TORCHRUN,
        action=Action.BLOCK_MASTER_PORT,
        rank_originates=False,
        evidence=r"EADDRINUSE|address already in use",
        notes=(
            "The harness listens on the chosen MASTER_PORT before torchrun starts; torchrun "
            "cannot create its store and no worker ever starts. No rank is at fault."
        ),
    ),
    Scenario(
        id="rendezvous-master-unreachable",
        summary="the second node of a 2-node job cannot reach the master",
        failure_class="rendezvous_failure",
        launcher=Launcher.TORCHRUN,
        rank_originates=False,
        world_sizes=(4,),
        evidence=r"timed out after \d+ms while trying to connect",
        plan_options={"torchrun_as_node": 1},
        notes=(
            "torchrun runs as node 1 of 2 (2 processes per node) with MASTER_ADDR=127.0.0.1 and "
            "a MASTER_PORT nothing listens on, as a node whose master never came up or is "
            "firewalled would; the static rendezvous gives up after its 15 s timeout. No worker "
            "starts; world_size is the job's intended size."
        ),
    ),
    Scenario(
        id="wrong-world-size",
        summary="the job declares more ranks than were launched",
        failure_class="rendezvous_failure",
        launcher=Launcher.MULTIPROCESSING,
        rank_originates=False,
        evidence=r"DistStoreError: wait timeout after|clients joined|waiting for clients",
        gloo_timeout_s=20,
        plan_options={"declared_extra_ranks": 1},
        notes=(
            "torch.multiprocessing.spawn starts world_size processes but each is told "
            "WORLD_SIZE=world_size+1; init_process_group waits for the missing rank until the "
            "timeout. No rank is at fault."
        ),
    ),
    Scenario(
        id="checkpoint-size-mismatch",
        summary="rank 0 resumes from a checkpoint of another model shape",
        failure_class="checkpoint_mismatch",
        launcher=Launcher.TORCHRUN_LOGDIR,
        fault="checkpoint_mismatch",
        rank_choice=RankChoice.ZERO,
        evidence=r"size mismatch for",
        notes=(
            "Rank 0 loads resume.pt (saved by a model with hidden size 96 instead of 128) before "
            "wrapping the model in DDP; load_state_dict raises while the other ranks wait in "
            "DDP's constructor for rank 0's parameters."
        ),
    ),
    Scenario(
        id="disk-full-checkpoint",
        summary="rank 0's checkpoint save fills the disk (torch.save to a path)",
        failure_class="disk_full",
        launcher=Launcher.TORCHRUN_LOGDIR,
        fault="checkpoint_save",
        rank_choice=RankChoice.ZERO,
        needs=(Need.MOUNT_NAMESPACE,),
        evidence=r"basic_ios::clear: iostream error|unexpected pos",
        plan_options={"checkpoint_bytes": 128 * 1024},
        notes=(
            "The checkpoint directory is a 128 KiB tmpfs in a private mount namespace; the "
            "checkpoint is larger. torch.save to a path reports the failed write as "
            "'basic_ios::clear: iostream error' and an 'unexpected pos' enforce failure: the "
            "words 'No space left on device' never appear."
        ),
    ),
    Scenario(
        id="disk-full-checkpoint-fileobj",
        summary="rank 0's checkpoint save fills the disk (torch.save to an open file)",
        failure_class="disk_full",
        launcher=Launcher.MULTIPROCESSING,
        fault="checkpoint_save",
        rank_choice=RankChoice.ZERO,
        needs=(Need.MOUNT_NAMESPACE,),
        evidence=r"No space left on device",
        plan_options={
            "checkpoint_bytes": 128 * 1024,
            "checkpoint_to_file_object": True,
            "log_rank_in_message": True,
        },
        notes=(
            "As disk-full-checkpoint, but the script opens the file itself and passes the file "
            "object to torch.save, so Python's write reports OSError [Errno 28]."
        ),
    ),
    Scenario(
        id="permission-denied-checkpoint",
        summary="rank 0 cannot write into the checkpoint directory",
        failure_class="filesystem_permission",
        launcher=Launcher.TORCHRUN_LOGDIR,
        fault="checkpoint_save",
        rank_choice=RankChoice.ZERO,
        needs=(Need.DROP_DAC_CAPABILITIES,),
        evidence=r"Permission denied",
        plan_options={"checkpoint_dir_owner": 65534},
        notes=(
            "The checkpoint directory belongs to another user (uid 65534, mode 0755) and the job "
            "runs without CAP_DAC_OVERRIDE (setpriv), as an unprivileged job would."
        ),
    ),
    Scenario(
        id="preemption-sigterm",
        summary="the scheduler preempts the job: SIGTERM to every process",
        failure_class="preemption",
        launcher=Launcher.TORCHRUN_LOGDIR,
        action=Action.TERMINATE_JOB,
        rank_originates=False,
        slurm_reason="PREEMPTION",
        evidence=r"DUE TO PREEMPTION",
        steps_after_fault=40,
        notes=(
            "At the fault step the harness writes slurmstepd's preemption line into the launcher "
            "log (simulated: no Slurm runs here) and sends SIGTERM to every process of the job, "
            "as Slurm's proctrack does; survivors get SIGKILL 10 s later."
        ),
    ),
    Scenario(
        id="time-limit-sigterm",
        summary="the job reaches its wall-time limit: SIGTERM to every process",
        failure_class="time_limit",
        launcher=Launcher.TORCHRUN,
        action=Action.TERMINATE_JOB,
        rank_originates=False,
        slurm_reason="TIME LIMIT",
        evidence=r"DUE TO TIME LIMIT",
        steps_after_fault=40,
        plan_options={"log_rank_in_message": True},
        notes=(
            "As preemption-sigterm with slurmstepd's time-limit line (simulated) for the batch job."
        ),
    ),
    Scenario(
        id="job-cancelled-scancel",
        summary="a person cancels the job: SIGTERM to every process",
        failure_class="job_cancelled",
        launcher=Launcher.MULTIPROCESSING,
        action=Action.TERMINATE_JOB,
        rank_originates=False,
        slurm_reason="",
        evidence=r"CANCELLED AT",
        steps_after_fault=40,
        plan_options={"log_rank_in_message": True},
        notes=(
            "As preemption-sigterm with slurmstepd's plain cancellation line (simulated), which "
            "is what scancel produces."
        ),
    ),
    Scenario(
        id="segfault-native",
        summary="one rank dies of SIGSEGV in native code",
        failure_class="native_crash",
        launcher=Launcher.TORCHRUN_LOGDIR,
        fault="segfault",
        evidence=r"Segmentation fault|SIGSEGV",
        notes=(
            "The faulty rank reads address 0 through ctypes at the fault step; the script has "
            "faulthandler enabled, which prints the Python stacks before the process dies."
        ),
    ),
    Scenario(
        id="module-not-found",
        summary="one rank's node lacks a Python package",
        failure_class="dependency_error",
        launcher=Launcher.TORCHRUN,
        fault="module_missing",
        rank_choice=RankChoice.NONZERO,
        evidence=r"ModuleNotFoundError: No module named 'fused_ops'",
        notes=(
            "The model imports `fused_ops`, a package the harness installs for every rank but the "
            "faulty one (as if one node ran an older image). The import fails after "
            "init_process_group; its peers wait for it in DDP's constructor."
        ),
    ),
    Scenario(
        id="missing-data-file",
        summary="a sample file of one rank's shard is missing",
        failure_class="corrupt_or_missing_data",
        launcher=Launcher.MULTIPROCESSING,
        fault="missing_data_file",
        evidence=r"FileNotFoundError: \[Errno 2\] No such file or directory",
        plan_options={"log_rank_in_message": True},
        notes=(
            "Every rank reads one file per sample (no DataLoader workers); one file listed in "
            "the faulty rank's manifest, in the fault step's batch, was deleted."
        ),
    ),
    Scenario(
        id="shape-mismatch",
        summary="one rank gets a batch with the wrong feature width",
        failure_class="shape_or_dtype_error",
        launcher=Launcher.MULTIPROCESSING,
        fault="shape_mismatch",
        evidence=r"shapes cannot be multiplied",
        plan_options={"log_rank_in_message": True},
        notes=(
            "At the fault step the faulty rank's batch has 48 features instead of 64; the first "
            "Linear layer raises."
        ),
    ),
    Scenario(
        id="ddp-unused-parameter",
        summary="a step leaves a parameter unused under DDP on every rank",
        failure_class="ddp_usage_error",
        launcher=Launcher.TORCHRUN_LOGDIR,
        fault="ddp_unused_parameter",
        rank_originates=False,
        evidence=r"Expected to have finished reduction in the prior iteration",
        notes=(
            "At the fault step every rank's batch comes without auxiliary targets, so the "
            "auxiliary head takes no part in the loss, and DDP runs without "
            "find_unused_parameters: the next forward raises DDP's unused-parameter error on "
            "every rank at once, so no rank is the origin."
        ),
    ),
    Scenario(
        id="straggler-timeout",
        summary="one rank slows down step by step until the collective times out",
        failure_class="straggler",
        launcher=Launcher.TORCHRUN_LOGDIR,
        fault="straggler",
        flight_recorder=True,
        evidence=r"Timed out waiting \d+ms",
        gloo_timeout_s=20,
        fault_steps=(2, 3),
        steps_after_fault=8,
        plan_options={"stall_dump_fraction": 0.75},
        notes=(
            "From the fault step on, the faulty rank's data loading sleeps 0.3 s x 2.5^k (k "
            "steps after the fault): 0.3, 0.75, 1.9, 4.7, 11.7, 29 s. Every rank logs step_time "
            "and data_time; only the straggler's data_time grows. The 29 s delay exceeds the 20 s "
            "Gloo timeout. " + _HANG_NOTE
        ),
    ),
    Scenario(
        id="collective-timeout-stuck-rank",
        summary="one rank blocks outside any collective; its peers time out",
        failure_class="collective_timeout",
        launcher=Launcher.TORCHRUN,
        fault="hang_in_step",
        flight_recorder=True,
        evidence=r"Timed out waiting \d+ms",
        plan_options={"log_rank_in_message": True},
        notes=(
            "At the fault step the faulty rank blocks in a sleep four times the Gloo timeout "
            "(alive, not stopped, printing nothing), as a rank stuck on I/O would; the others "
            "time out in the gradient all-reduce. " + _HANG_NOTE
        ),
    ),
    Scenario(
        id="fd-limit",
        summary="one rank runs out of file descriptors",
        failure_class="fd_or_process_limit",
        launcher=Launcher.TORCHRUN_LOGDIR,
        fault="fd_leak",
        evidence=r"Too many open files",
        notes=(
            "Every rank's dataset keeps each sample file open (a handle cache that never "
            "closes); the faulty rank's node has a lower open-files limit (RLIMIT_NOFILE: its "
            "descriptors at start plus what it needs until the fault step)."
        ),
    ),
)

BY_ID: dict[str, Scenario] = {scenario.id: scenario for scenario in SCENARIOS}


def scenario_seed(base_seed: int, scenario_id: str) -> int:
    """A stable per-scenario seed (Python's `hash` is salted per process, so not that)."""
    digest = hashlib.sha256(f"{base_seed}:{scenario_id}".encode()).hexdigest()
    return int(digest[:8], 16) % 100_000


@dataclass(frozen=True)
class Resolved:
    """A scenario's random choices for one seed; labels and plan are both derived from it."""

    seed: int
    world_size: int
    fault_rank: int
    fault_step: int


def choose(scenario: Scenario, base_seed: int) -> Resolved:
    seed = scenario_seed(base_seed, scenario.id)
    rng = random.Random(seed)
    world_size = rng.choice(scenario.world_sizes)
    candidates = {
        RankChoice.ANY: range(world_size),
        RankChoice.NONZERO: range(1, world_size),
        RankChoice.ZERO: range(1),
    }[scenario.rank_choice]
    fault_rank = rng.choice(list(candidates))
    fault_step = rng.choice(scenario.fault_steps)
    return Resolved(seed=seed, world_size=world_size, fault_rank=fault_rank, fault_step=fault_step)


def originating_rank(scenario: Scenario, resolved: Resolved) -> int | None:
    return resolved.fault_rank if scenario.expect_failure and scenario.rank_originates else None


# Plan options that only the harness uses (limits, mounts, ownership, launch shape).
HARNESS_OPTIONS = frozenset(
    {
        "job_memory_limit_bytes",
        "shm_bytes",
        "checkpoint_bytes",
        "checkpoint_dir_owner",
        "torchrun_as_node",
        "declared_extra_ranks",
        "stall_dump_fraction",
    }
)


def resolve(scenario: Scenario, base_seed: int, run_dir: str, master_port: int) -> Plan:
    resolved = choose(scenario, base_seed)
    options = {k: v for k, v in scenario.plan_options.items() if k not in HARNESS_OPTIONS}
    checkpoint_step = resolved.fault_step if scenario.fault == "checkpoint_save" else None
    fd_limit = None
    if scenario.fault == "fd_leak":
        # Room for the samples read before the fault step, plus a few for the rest of the step.
        fd_limit = (resolved.fault_step + 1) * 16 - 4
    stall_fraction = scenario.plan_options.get("stall_dump_fraction", 0.5)
    declared = resolved.world_size + scenario.plan_options.get("declared_extra_ranks", 0)
    return Plan(
        scenario=scenario.id,
        seed=resolved.seed,
        fault=scenario.fault,
        world_size=resolved.world_size,
        declared_world_size=declared,
        fault_rank=resolved.fault_rank if scenario.expect_failure else None,
        fault_step=resolved.fault_step,
        steps=resolved.fault_step + scenario.steps_after_fault,
        gloo_timeout_s=scenario.gloo_timeout_s,
        master_port=master_port,
        run_dir=run_dir,
        flight_recorder=scenario.flight_recorder,
        stall_dump_after_s=scenario.gloo_timeout_s * stall_fraction,
        checkpoint_step=checkpoint_step,
        open_files_limit=fd_limit,
        **options,
    )
