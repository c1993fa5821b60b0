"""The diagnosis of a `denpex run` bundle reads the telemetry the run gathered.

The bundle is made by `denpex.run.run_command` itself, sampling every 0.2 s, on a host whose
`nvidia-smi` and `dmesg` are stand-ins on PATH (this machine has no GPU): they print what the
real tools print for the query `denpex run` makes (nvidia-smi's `--format=csv,noheader,nounits`
rows; `dmesg --time-format iso` lines with the NVRM Xid text of a GPU that fell off the bus),
and `nvidia-smi` fails, as it does once a GPU is gone, from its third call on. `dcgmi` is not
installed, and must be said to be missing, never healthy. /proc is this machine's own.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from denpex.distributed.local import diagnose_parallel
from denpex.evidence import assemble
from denpex.models import Diagnosis
from denpex.run import run_command
from tests.conftest import bundled_matcher, diagnose_paths
from tests.distributed.test_fanout import OPTIONS

# Two GPUs: GPU 1 runs hot, throttled by software and hardware thermal slowdown (0x20 | 0x40),
# and has counted two uncorrected ECC errors.
NVIDIA_SMI_ROWS = (
    "0, 00000000:3B:00.0, 100, 61234, 81559, 71, 688.21, 1980, 0x0000000000000000, 0\n"
    "1, 00000000:5E:00.0, 100, 61190, 81559, 92, 412.57, 1275, 0x0000000000000060, 2\n"
)
NVIDIA_SMI_GONE = "Unable to determine the device handle for GPU0000:5E:00.0: Unknown Error\n"
DMESG = (
    "NVRM: GPU at PCI:0000:5e:00: GPU-6a1b2c3d-0000-1111-2222-333344445555\n"
    "NVRM: Xid (PCI:0000:5e:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"
)
"""The kernel's lines; the stand-in stamps them as `dmesg --time-format iso` does, at the time
it is called (the end of the run: older kernel lines are the host's history, set aside)."""
TRAINER = (
    "import sys, time\n"
    "time.sleep(1.5)\n"
    "print('RuntimeError: CUDA error: unspecified launch failure', file=sys.stderr)\n"
    "sys.exit(1)\n"
)


def _tool(folder: Path, name: str, script: str) -> None:
    path = folder / name
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tools = tmp_path_factory.mktemp("tools")
    (tools / "rows.csv").write_text(NVIDIA_SMI_ROWS)
    (tools / "dmesg.txt").write_text(DMESG)
    calls = tools / "calls"
    _tool(
        tools,
        "nvidia-smi",
        f'echo x >> "{calls}"\n'
        f'if [ "$(wc -l < "{calls}")" -gt 2 ]; then '
        f"printf '{NVIDIA_SMI_GONE.strip()}\\n' >&2; exit 255; fi\n"
        f'cat "{tools / "rows.csv"}"',
    )
    _tool(
        tools,
        "dmesg",
        "stamp=$(date -u +%Y-%m-%dT%H:%M:%S,000000+00:00)\n"
        f'sed "s/^/$stamp /" "{tools / "dmesg.txt"}"',
    )
    folder = tmp_path_factory.mktemp("run") / "bundle"
    kept = os.environ["PATH"]
    # Only the stand-ins and the interpreter's folder: no dcgmi, whatever this machine has.
    os.environ["PATH"] = f"{tools}:{Path(sys.executable).parent}:/usr/bin:/bin"
    try:
        with Path(os.devnull).open("wb") as quiet:
            result = run_command(
                [sys.executable, "-c", TRAINER],
                folder,
                stdout=quiet,
                stderr=quiet,
                telemetry_interval=0.2,
            )
    finally:
        os.environ["PATH"] = kept
    assert result.exit_code == 1
    return folder


@pytest.fixture(scope="module")
def diagnosis(bundle: Path) -> Diagnosis:
    return diagnose_paths([str(bundle)])


def _silent(diagnosis: Diagnosis) -> dict[str, object]:
    return {f.detector: f for f in diagnosis.silent}


def test_the_kernel_logs_xid_names_the_gpu_that_fell_off_the_bus(diagnosis: Diagnosis) -> None:
    top = diagnosis.root_causes[0]
    assert top.failure_class == "gpu_fell_off_bus"
    assert any(e.source.endswith("dmesg.log") and "Xid" in e.text for e in top.evidence)


def test_nvidia_smis_samples_show_the_ecc_errors_the_throttling_and_the_gpu_lost(
    diagnosis: Diagnosis,
) -> None:
    found = _silent(diagnosis)
    ecc = found["telemetry.gpu_ecc_uncorrected"]
    assert (ecc.failure_class, ecc.measurements) == (
        "gpu_memory_ecc",
        {"gpu": 1.0, "uncorrected_errors": 2.0},
    )
    throttle = found["telemetry.gpu_throttle"]
    assert "hardware thermal slowdown" in throttle.title
    assert "software thermal slowdown" in throttle.title
    assert throttle.measurements["max_temperature_c"] == 92.0 and throttle.suspicion
    lost = found["telemetry.gpu_lost"]
    assert lost.failure_class == "gpu_fell_off_bus" and lost.suspicion
    assert lost.measurements == {"gpus_before": 2.0, "gpus_after": 0.0}
    # Each points at the telemetry line it rests on, on the host that sampled it.
    for finding in (ecc, throttle, lost):
        (line,) = finding.evidence
        assert line.source.endswith("telemetry.jsonl") and line.host
        assert line.host == finding.hosts[0]
        assert json.loads(line.text)["time"]


def test_a_missing_tool_is_said_to_be_missing_never_healthy(diagnosis: Diagnosis) -> None:
    said = [w for w in diagnosis.warnings if "dcgmi was missing" in w]
    assert said and "unknown, not healthy" in said[0]
    assert not [w for w in diagnosis.warnings if "nvidia-smi was" in w]  # it ran at first
    kinds = {Path(i.source).name: i.kind for i in diagnosis.inputs}
    assert kinds["telemetry.jsonl"] == kinds["host.json"] == "telemetry"


def test_the_scan_split_over_processes_reads_the_same_telemetry(
    bundle: Path, diagnosis: Diagnosis
) -> None:
    pooled = diagnose_parallel([str(bundle)], OPTIONS, workers=2)
    assert pooled.silent == diagnosis.silent
    assert pooled.warnings == diagnosis.warnings


def test_host_memory_running_out_is_read_from_meminfo_and_pressure(tmp_path: Path) -> None:
    # A sample as the sampler writes it: /proc/meminfo's fields in kB, PSI's memory line.
    sample = {
        "time": "2026-03-02T02:49:50.000000+00:00",
        "host": "gpu-017",
        "memory_pressure": {
            "some_avg10": 71.3,
            "some_avg60": 40.2,
            "some_total": 9.1e7,
            "full_avg10": 38.4,
            "full_avg60": 20.5,
            "full_total": 5.2e7,
        },
        "meminfo": {
            "MemTotal_kB": 2113530068,
            "MemAvailable_kB": 61247360,
            "SwapTotal_kB": 0,
            "SwapFree_kB": 0,
            "Shmem_kB": 1048576,
        },
    }
    (tmp_path / "telemetry.jsonl").write_text(json.dumps(sample) + "\n")
    (tmp_path / "stderr.log").write_text("Killed\n")
    found = _silent(diagnose_paths([str(tmp_path)]))
    memory = found["telemetry.host_memory_low"]
    assert memory.failure_class == "host_oom" and memory.hosts == ["gpu-017"]
    assert memory.measurements == {"available_fraction": 0.029, "pressure_full_avg10": 38.4}
    assert "stalled on memory 38% of the last 10 s" in memory.title


def test_a_run_without_telemetry_reads_as_before(tmp_path: Path) -> None:
    (tmp_path / "stderr.log").write_text("Killed\n")
    plain = diagnose_paths([str(tmp_path)])
    assert not [f for f in plain.silent if f.detector.startswith("telemetry.")]


def test_the_evidence_every_view_reads_holds_the_telemetry(bundle: Path) -> None:
    """diagnose, the API and hang read one `Evidence`: the samples and the missing tool are in
    it, not in a side channel of the diagnosis."""
    evidence = assemble([str(bundle)], bundled_matcher())
    assert [s.source.rsplit("/", 1)[-1] for s in evidence.host.samples][:2] == [
        "telemetry.jsonl",
        "telemetry.jsonl",
    ]
    assert {t.tool: t.status for t in evidence.host.tools}["dcgmi"] == "missing"
    assert any("dcgmi was missing" in w for w in evidence.warnings)
