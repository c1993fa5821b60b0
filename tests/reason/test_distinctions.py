"""A host OOM kill versus a plain SIGKILL; culprits the logs name; history outside the job.

The torchrun summary is the real one of a run here in which rank 1 was SIGKILLed (its lines are
the examples of rules/torchelastic/worker_sigkill.yaml); the kernel line follows the OOM
killer's printf format in mm/oom_kill.c with the pid of that worker.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import diagnose_paths, write_job

SIGKILL_SUMMARY = (
    "Root Cause (first observed failure):\n[0]:\n  time      : 2026-11-30_06:47:36\n"
    "  host      : localhost\n  rank      : 1 (local_rank: 1)\n"
    "  exitcode  : -9 (pid: 15406)  (SIGKILL)\n  error_file: <N/A>\n"
    "  traceback : Signal 9 (SIGKILL) received by PID 15406\n"
)
OOM_KILL = (
    "Nov 30 06:47:35 localhost kernel: Out of memory: Killed process 15406 (python) "
    "total-vm:35106388kB, anon-rss:16533124kB, file-rss:90112kB, shmem-rss:0kB, UID:1000 "
    "pgtables:33468kB oom_score_adj:0\n"
)
MONITORED_BARRIER = (
    "[rank0]:[E1130 06:44:35.185522509 ProcessGroupGloo.cpp:67] [Rank 0]: Ranks 1, 2 failed to "
    "pass monitoredBarrier in 4000 ms\n"
)


def test_a_sigkill_without_an_oom_record_is_an_outside_kill_not_an_oom(tmp_path: Path) -> None:
    top = diagnose_paths([str(write_job(tmp_path, {"launcher.log": SIGKILL_SUMMARY}))]).root_causes[
        0
    ]
    assert top.failure_class == "process_killed"
    assert top.originating_rank == 1
    assert "not proof of an out-of-memory kill" in top.caveat


def test_the_oom_record_for_the_killed_pid_is_the_cause_and_names_its_rank(tmp_path: Path) -> None:
    job = write_job(tmp_path, {"launcher.log": SIGKILL_SUMMARY, "kern.log": OOM_KILL})
    diagnosis = diagnose_paths([str(job)])
    top = diagnosis.root_causes[0]
    assert top.failure_class == "host_oom"
    assert top.originating_rank == 1  # the kernel named pid 15406, torchrun mapped it to rank 1
    assert "torchelastic.worker_sigkill" in top.explains.signature_ids
    assert [r.failure_class for r in diagnosis.root_causes] == ["host_oom"]


def test_ranks_the_logs_name_as_behind_are_the_culprits(tmp_path: Path) -> None:
    top = diagnose_paths([str(write_job(tmp_path, {"rank0.log": MONITORED_BARRIER}))]).root_causes[
        0
    ]
    assert top.failure_class == "collective_timeout"
    assert "1, 2" in top.title


def test_host_records_from_long_before_the_job_are_history(
    tmp_path: Path,
) -> None:
    old_xid = (
        "Nov 27 01:02:03 localhost kernel: NVRM: Xid (PCI:0000:86:00): 79, pid='<unknown>', "
        "name=<unknown>, GPU has fallen off the bus.\n"
    )
    job = write_job(tmp_path, {"launcher.log": SIGKILL_SUMMARY, "kern.log": old_xid})
    diagnosis = diagnose_paths([str(job)])
    assert diagnosis.root_causes[0].failure_class == "process_killed"
    assert any("set aside as history" in w for w in diagnosis.warnings)
