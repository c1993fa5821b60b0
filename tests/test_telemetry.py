"""`denpex run`'s host telemetry: what is there is sampled, what is missing is said to be."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from denpex.telemetry import Sampler, flight_recorder_environment, scheduler_identifiers


def test_flight_recorder_dumps_are_turned_on_without_overriding_the_user(tmp_path: Path) -> None:
    user = {"PATH": "/usr/bin", "TORCH_NCCL_TRACE_BUFFER_SIZE": "20000"}
    child, added, kept = flight_recorder_environment(user, tmp_path)
    # The user's buffer size under its older name is kept, and not shadowed by the newer name.
    assert kept == {"TORCH_NCCL_TRACE_BUFFER_SIZE": "20000"}
    assert "TORCH_FR_BUFFER_SIZE" not in child
    assert added["TORCH_NCCL_DUMP_ON_TIMEOUT"] == "1"
    assert child["TORCH_FR_DUMP_TEMP_FILE"] == str(tmp_path / "fr" / "fr_trace_rank_")
    assert (tmp_path / "fr").is_dir()
    own_file = {"TORCH_NCCL_DEBUG_INFO_TEMP_FILE": "/scratch/fr_"}
    child, added, kept = flight_recorder_environment(own_file, tmp_path)
    assert "TORCH_FR_DUMP_TEMP_FILE" not in child and kept == own_file


def test_scheduler_identifiers_cover_slurm_and_the_kubernetes_downward_api() -> None:
    env = {
        "SLURM_JOB_ID": "4242",
        "SLURM_PROCID": "3",
        "POD_NAME": "trainer-worker-3",
        "NODE_NAME": "gpu-042",
        "HOME": "/root",
        "AWS_SECRET_ACCESS_KEY": "x",
    }
    assert scheduler_identifiers(env) == {
        "NODE_NAME": "gpu-042",
        "POD_NAME": "trainer-worker-3",
        "SLURM_JOB_ID": "4242",
        "SLURM_PROCID": "3",
    }


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this host has nvidia-smi")
def test_a_missing_gpu_tool_is_reported_missing_not_healthy(tmp_path: Path) -> None:
    sampler = Sampler(tmp_path, interval=0.05)
    sample = sampler.sample()
    assert "gpus" not in sample
    assert sampler.tools["nvidia-smi"].status == "missing"
    assert sample["meminfo"]["MemTotal_kB"] > 0  # type: ignore[index]
    sampler.finish({"SLURM_JOB_ID": "7"}, {"set_by_denpex": {}, "kept_from_user": {}})
    host = json.loads((tmp_path / "host.json").read_text())
    assert host["tools"]["nvidia-smi"]["status"] == "missing"
    assert host["scheduler"] == {"SLURM_JOB_ID": "7"}
    assert host["tools"]["dmesg"]["status"] in ("ok", "missing", "failed")
