"""Privileged set-up around an injected job, and the guarantee that nothing outlives it.

Consumes scenario needs (a memory limit, private tmpfs mounts, dropped capabilities); produces
argv prefixes that impose them on the launcher and everything it starts, probes that say why a
need cannot be met here, and `reap`, which kills every process of a run. Every process of a run
carries the environment variable RUN_MARKER_ENV (children inherit it, even when torchrun moves
them into new sessions), so cleanup finds them all through /proc without relying on process
groups. Mounts live in a private mount namespace that disappears with its last process, so there
is nothing to unmount; cgroups are removed by `MemoryCgroup` on exit.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

RUN_MARKER_ENV = "DENPEX_INJECT_RUN"
_CGROUP_V1_MEMORY = Path("/sys/fs/cgroup/memory")
_CGROUP_PREFIX = "denpex-inject-"


def processes_of_run(marker: str) -> list[int]:
    """Pids whose environment carries this run's marker."""
    needle = f"{RUN_MARKER_ENV}={marker}".encode() + b"\0"
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:  # gone, or a kernel thread
            continue
        if needle in environ or environ.endswith(needle[:-1]):
            found.append(int(entry.name))
    return found


def new_marker() -> str:
    """A run's marker: this generator's pid (so orphans can be recognised) and a random part."""
    return f"{os.getpid()}-{uuid.uuid4().hex}"


def reap_orphans() -> list[int]:
    """Kill processes left by a generator that died (its pid, in their marker, is gone)."""
    prefix = f"{RUN_MARKER_ENV}=".encode()
    orphans = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        for variable in environ.split(b"\0"):
            if variable.startswith(prefix) and not _owner_alive(variable[len(prefix) :]):
                orphans.append(int(entry.name))
    for pid in orphans:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGCONT)
            os.kill(pid, signal.SIGKILL)
    return orphans


def _owner_alive(marker: bytes) -> bool:
    owner = marker.split(b"-", 1)[0]
    if not owner.isdigit():
        return True  # not one of ours: leave it alone
    try:
        os.kill(int(owner), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def signal_run(marker: str, signum: int) -> list[int]:
    pids = processes_of_run(marker)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)
    return pids


def reap(marker: str, deadline_s: float = 10.0) -> list[int]:
    """SIGCONT then SIGKILL every process of the run until none is left; return the stragglers.

    Stopped processes are continued first so that a pending SIGKILL is not held up.
    """
    killed: set[int] = set()
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        pids = processes_of_run(marker)
        if not pids:
            return []
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGCONT)
                os.kill(pid, signal.SIGKILL)
            killed.add(pid)
        time.sleep(0.2)
    return processes_of_run(marker)


# --- probes: None when usable, else the reason --------------------------------------------------


def probe_memory_cgroup() -> str | None:
    if os.geteuid() != 0:
        return "needs root to create a memory cgroup"
    if not (_CGROUP_V1_MEMORY / "memory.limit_in_bytes").exists():
        return f"no cgroup v1 memory controller at {_CGROUP_V1_MEMORY}"
    probe = _CGROUP_V1_MEMORY / f"{_CGROUP_PREFIX}probe-{os.getpid()}"
    try:
        probe.mkdir()
        probe.rmdir()
    except OSError as error:
        return f"cannot create a memory cgroup: {error}"
    if shutil.which("dmesg") is None:
        return "dmesg is not installed (the kernel's OOM report is part of the case)"
    return None


def probe_mount_namespace() -> str | None:
    if shutil.which("unshare") is None:
        return "unshare(1) is not installed"
    result = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", _mount_script([]) + " true"],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        return f"cannot create a private mount namespace: {result.stderr.strip()}"
    return None


def probe_drop_capabilities() -> str | None:
    if os.geteuid() != 0:
        return "the scenario needs root (to drop CAP_DAC_OVERRIDE from a root job)"
    if shutil.which("setpriv") is None:
        return "setpriv(1) is not installed"
    return None


# --- wrappers: argv prefixes -------------------------------------------------------------------


@dataclass(frozen=True)
class TmpfsMount:
    target: Path
    size_bytes: int


def _mount_script(mounts: list[TmpfsMount]) -> str:
    steps = [f"mount -t tmpfs -o size={m.size_bytes} tmpfs '{m.target}' &&" for m in mounts]
    return " ".join(steps)


def mount_namespace_argv(mounts: list[TmpfsMount]) -> list[str]:
    """Run the command in a private mount namespace with these tmpfs mounts."""
    script = _mount_script(mounts) + ' exec "$@"'
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh"]


def drop_dac_capabilities_argv() -> list[str]:
    """Run the command as root without the capabilities that bypass file permissions."""
    return ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]


class MemoryCgroup:
    """A cgroup v1 memory cgroup with a hard limit, removed (after killing its tasks) on exit."""

    def __init__(self, name: str, limit_bytes: int) -> None:
        self.path = _CGROUP_V1_MEMORY / f"{_CGROUP_PREFIX}{name}"
        self.limit_bytes = limit_bytes

    def __enter__(self) -> MemoryCgroup:
        self.path.mkdir()
        (self.path / "memory.limit_in_bytes").write_text(str(self.limit_bytes))
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()

    @property
    def name(self) -> str:
        return "/" + self.path.name

    def argv(self) -> list[str]:
        """Join the cgroup, then exec the command: everything it starts is inside."""
        return ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(self.path)]

    def remove(self) -> None:
        end = time.monotonic() + 10
        while self.path.exists() and time.monotonic() < end:
            for pid in (self.path / "cgroup.procs").read_text().split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
            with contextlib.suppress(OSError):
                self.path.rmdir()
            time.sleep(0.1)


def remove_stale_cgroups() -> None:
    """Empty cgroups left by a generator that was itself killed."""
    if not _CGROUP_V1_MEMORY.exists():
        return
    for stale in _CGROUP_V1_MEMORY.glob(f"{_CGROUP_PREFIX}*"):
        with contextlib.suppress(OSError):
            if not (stale / "cgroup.procs").read_text().strip():
                stale.rmdir()
