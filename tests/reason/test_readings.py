"""A class whose own record is missing leaves readings open: they follow the answer, never
replace it, and say why they are listed.

The lines are real: torchrun's agent line from github.com/lmzpai/roboMamba/issues/10 and
vLLM's worker line from github.com/MiniMax-AI/MiniMax-01/issues/42; the kernel's OOM kill is
one this project's machine printed (a rank under a 300 MiB cgroup v2 limit).
"""

from __future__ import annotations

from pathlib import Path

from denpex.reason.readings import READING_SHARE
from tests.conftest import diagnose_paths, write_job

SIGKILLED = (
    "E0325 20:57:27.620000 2606 site-packages/torch/distributed/elastic/multiprocessing/api.py:869]"
    " failed (exitcode: -9) local_rank: 5 (pid: 2630) of binary: /root/miniconda3/bin/python\n"
)
SYSTEM_ERROR = (
    "(VllmWorkerProcess pid=221) ERROR 04-06 20:46:48 [multiproc_worker_utils.py:238] "
    "torch.distributed.DistBackendError: NCCL error in: "
    "/pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, unhandled system error (run with "
    "NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n"
)
OOM_KILL = (
    "[ 2231.032930] Memory cgroup out of memory: Killed process 18857 (python) total-vm:909232kB,"
    " anon-rss:305896kB, file-rss:75964kB, shmem-rss:0kB, UID:0 pgtables:1064kB oom_score_adj:0\n"
)


def test_a_sigkill_with_no_sender_in_evidence_leaves_the_oom_killer_open(tmp_path: Path) -> None:
    diagnosis = diagnose_paths([str(write_job(tmp_path, {"train.log": SIGKILLED}))])
    top, reading = diagnosis.root_causes[:2]
    assert top.failure_class == "process_killed"
    assert reading.failure_class == "host_oom"
    assert reading.evidence == [] and reading.signature_id is None
    assert "no line of the input states it" in reading.title
    assert reading.caveat.startswith("Not in evidence.")
    assert any("dmesg" in step for step in reading.next_steps)
    assert reading.confidence <= (1 - top.confidence) * READING_SHARE + 0.001
    assert reading.confidence <= top.confidence  # it follows the answer, never outweighs it


def test_a_class_with_a_line_of_its_own_is_never_offered_again_as_a_reading(
    tmp_path: Path,
) -> None:
    # Another process's OOM kill: host_oom has a line of its own, so it is not "possibly".
    files = {"train.log": SIGKILLED, "dmesg.log": OOM_KILL}
    diagnosis = diagnose_paths([str(write_job(tmp_path, files))])
    oom = [c for c in diagnosis.root_causes if c.failure_class == "host_oom"]
    assert len(oom) == 1
    assert oom[0].evidence and "Killed process 18857" in oom[0].evidence[0].text
    assert all(not c.title.startswith("Possibly") for c in diagnosis.root_causes)


def test_an_unhandled_system_error_leaves_the_network_and_shared_memory_open(
    tmp_path: Path,
) -> None:
    diagnosis = diagnose_paths([str(write_job(tmp_path, {"worker.log": SYSTEM_ERROR}))])
    classes = [c.failure_class for c in diagnosis.root_causes]
    assert classes[0] == "nccl_internal_error"
    assert {"network_config_error", "shm_exhausted"} <= set(classes[1:])
    assert sum(c.confidence for c in diagnosis.root_causes) <= 1.0 + 1e-6


def test_an_unhandled_cuda_error_names_its_own_kind_of_cause_and_leaves_no_network_reading(
    tmp_path: Path,
) -> None:
    # github.com/pytorch/pytorch/pull/177472 (CI on H100; its "Last error:" names NVLS).
    line = (
        "torch.distributed.DistBackendError: NCCL error in: /var/lib/jenkins/workspace/torch/csrc/"
        "distributed/c10d/NCCLUtils.cpp:93, unhandled cuda error (run with NCCL_DEBUG=INFO for "
        "details), NCCL version 2.29.3\n"
    )
    diagnosis = diagnose_paths([str(write_job(tmp_path, {"worker.log": line}))])
    classes = [c.failure_class for c in diagnosis.root_causes]
    assert classes[0] == "nccl_internal_error"
    assert "network_config_error" not in classes and "shm_exhausted" not in classes
