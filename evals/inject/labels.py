"""The labels read from captured text: the loudest error, and whether it misleads.

Consumes the case's text files (relative path -> text); produces `Loudest`, the error a naive
reader would blame, and `is_misleading`, which compares it with the ground truth.

The naive reader follows the launcher: torchrun's "Root Cause (first observed failure)" block,
else torch.multiprocessing.spawn's report of the process that failed, else the last error line
of the launcher's output (`launcher.log`, or else every file whose name states no rank). When
the launcher names a rank but not the error, the reader opens that rank's output and takes its
last error line. `naive_class` is what that one line suggests at face value, from a short table
of unmistakable phrases; a line that suggests nothing specific (an exit code, a generic failure)
claims no class.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

# --- finding error lines -----------------------------------------------------------------------

_PREFIX = re.compile(
    r"^(?:\[(?!rank\d)[A-Za-z_][A-Za-z_-]*?(?P<local>\d+)\]:)?(?:\[rank(?P<rank>\d+)\]: ?)?"
)
_ERROR_LINE = re.compile(
    r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt)(?::|$)"
    r"|^terminate called after throwing"
    r"|^Fatal Python error:"
    r"|^\[?[EF]\d{4} \d\d:\d\d:\d\d"  # glog, with a date: E1130 06:48:40.377 ...
    r"|^\[[EF] [\w.]+:\d+\]"  # glog without one: [E ProcessGroupNCCL.cpp:563]
    r"|^slurmstepd: error:"
    r"| NCCL WARN "
)
# An exception behind some other logger's prefix, e.g. `ERROR 11-18 18:07:28 engine.py:366] `.
_EMBEDDED_EXCEPTION = re.compile(
    r"(?<=[\s\]|>])(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception): \S"
)
# Lines that look like errors but are the launcher's own summary, never a cause by themselves.
_SUMMARY = re.compile(r"ChildFailedError:|ProcessRaisedException:\s*$")


@dataclass(frozen=True)
class ErrorLine:
    text: str  # without launcher or excepthook prefixes
    rank: int | None  # global rank from `[rankN]:`, else torchrun's local rank (single node)


def error_lines(text: str) -> list[ErrorLine]:
    found = []
    for raw in text.splitlines():
        prefix = _PREFIX.match(raw)
        assert prefix is not None  # the pattern matches the empty string
        body = raw[prefix.end() :].strip()
        if not _ERROR_LINE.search(body) and (embedded := _EMBEDDED_EXCEPTION.search(body)):
            body = body[embedded.start() :]
        if not _ERROR_LINE.search(body) or _SUMMARY.search(body):
            continue
        rank = prefix["rank"] or prefix["local"]
        found.append(ErrorLine(text=body, rank=int(rank) if rank is not None else None))
    return found


# --- the loudest error -------------------------------------------------------------------------


@dataclass(frozen=True)
class Loudest:
    text: str
    rank: int | None
    where: str

    def describe(self) -> str:
        who = f"rank {self.rank}" if self.rank is not None else "no rank"
        return f"{self.where} -> {who}: {self.text}"


_ROOT_CAUSE = re.compile(
    r"Root Cause \(first observed failure\):\s*\n\[\d+\]:\s*\n(?P<block>(?:[ \t]+\w+\s*:.*\n?)+)"
)
_FIELD = re.compile(r"^[ \t]+(?P<key>\w+)\s*:\s?(?P<value>.*)$", re.M)
_SPAWN_RAISED = re.compile(r"^-- Process (?P<index>\d+) terminated with the following error:", re.M)
_SPAWN_SIGNAL = re.compile(
    r"^(?:[\w.]+\.)?ProcessExitedException: process (?P<index>\d+) terminated with "
    r"(?:signal (?P<signal>\w+)|exit code (?P<code>-?\d+))",
    re.M,
)
_TORCHRUN_RANK_FILE = re.compile(r"attempt_\d+/(?P<rank>\d+)/(?:stderr|stdout)\.log$")
_RANK_FILE = re.compile(r"(?:^|[^a-z])rank[_-]?(?P<rank>\d+)[^/]*$", re.I)


def rank_of_file(path: str) -> int | None:
    """The rank a file's name states (torchrun's log-dir layout, or `rankN` in the name)."""
    if found := _TORCHRUN_RANK_FILE.search(path):
        return int(found["rank"])
    if found := _RANK_FILE.search(PurePosixPath(path).name):
        return int(found["rank"])
    return None


def _last_error_of_rank(rank: int, files: Mapping[str, str], launcher: str) -> str | None:
    candidates: list[str] = []
    for path, text in files.items():
        if rank_of_file(path) == rank:
            candidates += [line.text for line in error_lines(text)]
    if not candidates:
        candidates = [line.text for line in error_lines(launcher) if line.rank == rank]
    return candidates[-1] if candidates else None


def _launcher_text(files: Mapping[str, str]) -> str:
    """The launcher's output, or else every file no rank is named for, in name order."""
    if "launcher.log" in files:
        return files["launcher.log"]
    unattributed = sorted(path for path in files if rank_of_file(path) is None)
    return "\n".join(files[path] for path in unattributed)


def loudest_error(files: Mapping[str, str]) -> Loudest | None:
    launcher = _launcher_text(files)
    if found := _ROOT_CAUSE.search(launcher):
        fields = {m["key"]: m["value"].strip() for m in _FIELD.finditer(found["block"])}
        rank_field = re.match(r"(\d+)", fields.get("rank", ""))
        rank = int(rank_field[1]) if rank_field else None
        traceback = fields.get("traceback", "")
        where = "torchrun Root Cause (first observed failure)"
        if traceback.startswith("Signal"):
            return Loudest(text=traceback, rank=rank, where=where)
        exit_code = fields.get("exitcode", "?").split()[0]
        text = _last_error_of_rank(rank, files, launcher) if rank is not None else None
        return Loudest(text=text or f"exitcode {exit_code}", rank=rank, where=where)
    if found := _SPAWN_SIGNAL.search(launcher):
        text = found[0].split(": ", 1)[1] if ": " in found[0] else found[0]
        return Loudest(text=text, rank=int(found["index"]), where="torch.multiprocessing.spawn")
    if found := _SPAWN_RAISED.search(launcher):
        following = error_lines(launcher[found.end() :])
        text = following[0].text if following else found[0]
        return Loudest(text=text, rank=int(found["index"]), where="torch.multiprocessing.spawn")
    lines = error_lines(launcher)
    if lines:
        last = lines[-1]
        return Loudest(text=last.text, rank=last.rank, where="last error line of the launcher")
    return None


# --- what a line suggests at face value ---------------------------------------------------------

# Ordered: the first match wins, so the specific phrases come before the general ones.
_NAIVE: tuple[tuple[str, str], ...] = (
    (r"DUE TO PREEMPTION", "preemption"),
    (r"DUE TO TIME LIMIT", "time_limit"),
    (r"DUE TO NODE FAIL", "node_failure"),
    (r"slurmstepd: error: \*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED AT \S+ \*\*\*", "job_cancelled"),
    (r"oom[-_]kill|Out of memory: Killed|OOMKilled|Memory cgroup out of memory", "host_oom"),
    (r"Xid\b.*\b79\b|fallen off the bus|Unable to determine the device handle", "gpu_fell_off_bus"),
    (r"NET/IB ?: Got completion|IBV_WC_RETRY_EXC_ERR|link (?:is )?down", "network_fabric_error"),
    (r"no socket interface found|NCCL_SOCKET_IFNAME", "network_config_error"),
    (r"no kernel image is available", "unsupported_gpu_arch"),
    (
        r"driver version is insufficient|NVIDIA driver on your system is too old",
        "cuda_driver_mismatch",
    ),
    (r"No available memory for the cache blocks|KV cache", "kv_cache_exhausted"),
    (r"Check batch related parameters", "framework_config_error"),
    (r"CUDA out of memory|CUDA error: out of memory|OutOfMemoryError", "device_oom"),
    (r"device-side assert", "device_side_assert"),
    (r"illegal memory access", "illegal_memory_access"),
    (r"shared memory|shm", "shm_exhausted"),
    (r"No space left on device|Disk quota exceeded", "disk_full"),
    (r"Too many open files|Resource temporarily unavailable.*fork", "fd_or_process_limit"),
    (r"can't allocate memory|Cannot allocate memory|MemoryError|not enough memory", "host_oom"),
    (r"DataLoader worker .*(?:killed by signal|exited unexpectedly)", "dataloader_worker_died"),
    (
        r"failed reading zip archive|failed finding central directory|unexpected EOF"
        r"|truncated (?:file|data|record)|(?:file|data|record|sample) (?:is )?corrupt",
        "corrupt_or_missing_data",
    ),
    (r"Caught \w+ in DataLoader worker", "data_preprocessing_error"),
    (
        r"size mismatch for|Error\(s\) in loading state_dict|Missing key\(s\) in state_dict",
        "checkpoint_mismatch",
    ),
    (
        r"Expected to have finished reduction|marked ready twice|did not receive grad",
        "ddp_usage_error",
    ),
    (
        r"collective mismatch|doesn't match expected size|Detected mismatch between collectives",
        "collective_mismatch",
    ),
    (r"returned nan values|loss is nan|\bnan\b.*loss|loss.*\b(?:nan|inf)\b", "nan_or_inf"),
    (
        r"shapes cannot be multiplied|size of tensor a|must match the size|expected scalar type"
        r"|must have the same dtype",
        "shape_or_dtype_error",
    ),
    (r"ModuleNotFoundError|ImportError|undefined symbol", "dependency_error"),
    (r"FileNotFoundError|No such file or directory", "corrupt_or_missing_data"),
    (r"PermissionError|Permission denied|Read-only file system", "filesystem_permission"),
    (
        r"EADDRINUSE|address already in use|waiting for clients|clients joined"
        r"|trying to connect to|DistStoreError|RendezvousTimeoutError",
        "rendezvous_failure",
    ),
    (
        r"Watchdog caught collective operation timeout|Timed out waiting|timed out|Timeout",
        "collective_timeout",
    ),
    (r"Connection closed by peer|Connection reset by peer|Broken pipe", "peer_process_died"),
    (
        r"SIGSEGV|Segmentation fault|SIGABRT|Aborted|SIGBUS|Bus error|Signal (?:6|7|11)\b",
        "native_crash",
    ),
    (r"SIGKILL|SIGTERM|Signal (?:9|15)\b|signal: Killed", "process_killed"),
)
_NAIVE_COMPILED = tuple((re.compile(pattern, re.I), cls) for pattern, cls in _NAIVE)
# A Python exception with no phrase above reads as a bug in user code.
_PYTHON_EXCEPTION = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception):")
# ... unless it is one of the generic wrappers that say nothing about the cause.
_GENERIC = re.compile(r"^(?:[\w.]*\.)?(?:RuntimeError|ChildFailedError|DistBackendError):\s*$")


def naive_class(text: str) -> str | None:
    for pattern, failure_class in _NAIVE_COMPILED:
        if pattern.search(text):
            return failure_class
    if _PYTHON_EXCEPTION.match(text) and not _GENERIC.match(text):
        return "python_exception"
    return None


def is_misleading(
    loudest: Loudest | None,
    expect_failure: bool,
    failure_class: str | None,
    originating_rank: int | None,
) -> bool:
    """True when the loudest error names another rank, or suggests another class, than the truth.

    A rank is compared only when both sides name one; a class only when the line suggests one.
    """
    if not expect_failure or loudest is None:
        return False
    wrong_rank = (
        originating_rank is not None
        and loudest.rank is not None
        and loudest.rank != originating_rank
    )
    suggested = naive_class(loudest.text)
    wrong_class = suggested is not None and suggested != failure_class
    return wrong_rank or wrong_class
