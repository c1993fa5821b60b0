"""Jobs whose logs the fan-out tests diagnose in one process and in several."""

from __future__ import annotations

import gzip
import io
import shutil
import tarfile
from pathlib import Path

import pytest

from tests.conftest import BAD_SAMPLE, REPO

HANG_CASE = REPO / "evals" / "hang" / "killed"
STEP = "{stamp} INFO train: step {step} loss {loss:.4f} lr 3.0e-04"
WATCHDOG = (
    "[rank{rank}]:[E0302 02:59:{second:02d}.000000 ProcessGroupNCCL.cpp:629] [Rank {rank}] "
    "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5891, OpType=ALLREDUCE, "
    "NumelIn=131072000, NumelOut=131072000, Timeout(ms)=600000) ran for 600081 milliseconds "
    "before timing out."
)
XID_79 = (
    "Mar  2 02:49:58 gpu-001 kernel: NVRM: Xid (PCI:0000:86:00): 79, pid='<unknown>', "
    "name=<unknown>, GPU has fallen off the bus."
)


@pytest.fixture(scope="session")
def job_2025(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2025 job on two hosts: ranks' Python logs, the watchdog timeouts of every rank but the
    one whose GPU fell off the bus, and that host's kernel log, whose syslog stamps print no
    year (read in the year the ranks' logs print, not the clock's)."""
    root = tmp_path_factory.mktemp("job-2025")
    for rank in range(8):
        host = root / f"gpu-{rank // 4:03d}"
        host.mkdir(exist_ok=True)
        lines = [
            STEP.format(
                stamp=f"2025-03-02 02:{10 + s // 60:02d}:{s % 60:02d},000",
                step=s,
                loss=3.0 - s / 100,
            )
            for s in range(120)
        ]
        if rank != 5:
            lines.append(WATCHDOG.format(rank=rank, second=10 + rank))
        (host / f"rank{rank}.log").write_text("\n".join(lines) + "\n")
    (root / "gpu-001" / "kern.log").write_text(XID_79 + "\n")
    return root


@pytest.fixture(scope="session")
def mixed_job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Logs as plain files, a .tar.gz of a run's folder, a gzip log and Flight Recorder dumps."""
    root = tmp_path_factory.mktemp("mixed")
    shutil.copytree(HANG_CASE / "dumps", root / "dumps")
    shutil.copytree(HANG_CASE / "logs", root / "logs")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(BAD_SAMPLE, arcname="sample")
    (root / "sample.tar.gz").write_bytes(buffer.getvalue())
    launcher = (BAD_SAMPLE / "launcher.log").read_bytes()
    (root / "launcher.log.gz").write_bytes(gzip.compress(launcher))
    return root
