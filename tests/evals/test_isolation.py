"""Cleanup finds every process of a run, stopped or in its own session, and kills it."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from evals.inject import isolation


def _start(marker: str, *argv: str, new_session: bool = False) -> subprocess.Popen[bytes]:
    env = {**os.environ, isolation.RUN_MARKER_ENV: marker}
    return subprocess.Popen(list(argv), env=env, start_new_session=new_session)


def test_processes_are_found_by_their_marker_even_in_another_session() -> None:
    marker = uuid.uuid4().hex
    mine = _start(marker, "sleep", "30", new_session=True)
    other = _start(uuid.uuid4().hex, "sleep", "30")
    try:
        assert isolation.processes_of_run(marker) == [mine.pid]
    finally:
        for process in (mine, other):
            process.kill()
            process.wait()


def test_reap_kills_a_stopped_process_and_its_grandchildren() -> None:
    marker = uuid.uuid4().hex
    parent = _start(marker, "sh", "-c", "sleep 30 & exec sleep 30")
    try:
        time.sleep(0.3)
        os.kill(parent.pid, signal.SIGSTOP)
        assert len(isolation.processes_of_run(marker)) == 2
        assert isolation.reap(marker) == []
        assert isolation.processes_of_run(marker) == []
    finally:
        parent.kill()
        assert parent.wait(timeout=5) == -signal.SIGKILL


def test_the_slurm_line_has_slurmstepd_s_shape() -> None:
    from datetime import datetime

    from evals.inject.harness import slurm_cancel_line

    when = datetime(2024, 5, 1, 12, 0, 0)
    assert (
        slurm_cancel_line(123456, "node01", when, "PREEMPTION", step=True)
        == "slurmstepd: error: *** STEP 123456.0 ON node01 CANCELLED AT 2024-05-01T12:00:00 "
        "DUE TO PREEMPTION ***"
    )
    assert (
        slurm_cancel_line(123456, "node01", when, "TIME LIMIT", step=False)
        == "slurmstepd: error: *** JOB 123456 ON node01 CANCELLED AT 2024-05-01T12:00:00 "
        "DUE TO TIME LIMIT ***"
    )
    assert slurm_cancel_line(123456, "node01", when, "", step=True).endswith(
        "CANCELLED AT 2024-05-01T12:00:00 ***"
    )


@pytest.mark.skipif(isolation.probe_mount_namespace() is not None, reason="no mount namespace")
def test_a_private_tmpfs_is_seen_inside_and_gone_outside(tmp_path: Path) -> None:
    target = tmp_path / "ckpt"
    target.mkdir()
    argv = isolation.mount_namespace_argv([isolation.TmpfsMount(target, 64 * 1024)])
    probe = ["sh", "-c", f"dd if=/dev/zero of={target}/x bs=1k count=128 2>&1; echo rc=$?"]
    result = subprocess.run(argv + probe, capture_output=True, text=True, check=True)
    assert "No space left on device" in result.stdout
    assert not (target / "x").exists()


@pytest.mark.skipif(isolation.probe_memory_cgroup() is not None, reason="no memory cgroup")
def test_a_memory_cgroup_is_removed_with_its_tasks() -> None:
    with isolation.MemoryCgroup(f"test-{uuid.uuid4().hex[:8]}", 256 * 2**20) as cgroup:
        process = subprocess.Popen([*cgroup.argv(), "sleep", "30"])
        time.sleep(0.3)
        assert str(process.pid) in (cgroup.path / "cgroup.procs").read_text().split()
    assert not cgroup.path.exists()
    assert process.wait(timeout=5) == -signal.SIGKILL


def test_orphans_of_a_dead_generator_are_reaped_and_live_runs_are_not() -> None:
    finished = subprocess.Popen(["true"])
    finished.wait()
    orphan = _start(f"{finished.pid}-{uuid.uuid4().hex}", "sleep", "30")
    alive = _start(isolation.new_marker(), "sleep", "30")
    try:
        reaped = isolation.reap_orphans()
        assert orphan.pid in reaped
        assert alive.pid not in reaped
        assert orphan.wait(timeout=5) == -signal.SIGKILL
        assert alive.poll() is None
    finally:
        for process in (orphan, alive):
            process.kill()
            process.wait()
