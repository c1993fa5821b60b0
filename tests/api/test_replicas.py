"""Two `denpex serve` processes over one PostgreSQL store, concurrent clients, and one replica
killed while it runs a job: nothing is lost, duplicated or half-written.

Real processes and the local PostgreSQL (a fresh schema). The replica is frozen (SIGSTOP) the
moment the store shows it holding a job, checked to still hold it, then killed (SIGKILL): a
machine that vanished mid-job, caught deterministically rather than by timing.
"""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from denpex.auth import signed_headers
from denpex.store.sealing import new_key
from denpex.store.store import open_store
from tests.conftest import BAD_SAMPLE, REPO
from tests.store.conftest import fresh_postgres_schema

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

TENANT, SECRET = "acme", "acme-secret-0123456789"
LEASE_S = 3


BODY_KEY = new_key()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def _replica(url: str, tenants: Path, log: Path) -> Iterator[tuple[subprocess.Popen, str]]:
    port = _free_port()
    with log.open("wb") as output:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "denpex",
                "serve",
                "--tenants",
                str(tenants),
                "--port",
                str(port),
                "--store",
                url,
                "--job-workers",
                "1",
                "--job-lease",
                str(LEASE_S),
            ],
            cwd=REPO,
            stdout=output,
            stderr=subprocess.STDOUT,
            # Replicas sharing a PostgreSQL store seal queued bodies under one key.
            env={**os.environ, "DENPEX_JOB_BODY_KEY": BODY_KEY},
        )
    try:
        yield process, f"http://127.0.0.1:{port}"
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGCONT)
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


def _wait_ready(base: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        assert process.poll() is None, log.read_text()
        try:
            if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"{base} never became ready: {log.read_text()[-2000:]}")


def _post(base: str, body: bytes, *, job: bool = False) -> httpx.Response:
    headers = signed_headers(SECRET, TENANT, "POST", "/v1/diagnoses", body)
    if job:
        headers["Prefer"] = "respond-async"
    return httpx.post(f"{base}/v1/diagnoses", content=body, headers=headers, timeout=120)


def _get(base: str, path: str) -> httpx.Response:
    return httpx.get(
        f"{base}{path}", headers=signed_headers(SECRET, TENANT, "GET", path), timeout=60
    )


def _tar_gz(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in files.items():
            member = tarfile.TarInfo(name)
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data))
    return buffer.getvalue()


def _bad_sample(copies: int = 1) -> bytes:
    """The bundled 4-rank failure as a .tar.gz; with copies > 1, each rank's log repeated (a
    longer job to diagnose, the same failure)."""
    files = {}
    for path in sorted(p for p in BAD_SAMPLE.rglob("*") if p.is_file()):
        data = path.read_bytes()
        files[f"job/{path.relative_to(BAD_SAMPLE).as_posix()}"] = data * copies
    return _tar_gz(files)


SYNC_LINES = [
    b"[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered\n",
    b"[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n",
    b"[rank3]: KeyError: 'label'\n",
    b"[rank2]: RuntimeError: NCCL communicator was aborted on rank 2.\n",
]


def _held_by(url: str, pid: int) -> list[str]:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            return list(
                connection.scalars(
                    text(
                        "SELECT id FROM jobs WHERE state = 'running' AND claimed_by LIKE :who "
                        "ORDER BY id"
                    ),
                    {"who": f"%:{pid}:%"},
                )
            )
    finally:
        engine.dispose()


def _finished(base: str, job_id: str, timeout_s: float = 300) -> dict:
    deadline = time.monotonic() + timeout_s
    while (job := _get(base, f"/v1/jobs/{job_id}").json())["state"] in ("queued", "running"):
        assert time.monotonic() < deadline, job
        time.sleep(0.3)
    return job


def test_two_replicas_lose_duplicate_and_half_write_nothing_when_one_dies_mid_job(
    tmp_path: Path,
) -> None:
    tenants = tmp_path / "tenants.json"
    tenants.write_text(json.dumps({TENANT: SECRET}))
    small_job, long_job = _bad_sample(), _bad_sample(copies=50)
    with (
        fresh_postgres_schema() as url,
        _replica(url, tenants, tmp_path / "a.log") as (process_a, base_a),
        _replica(url, tenants, tmp_path / "b.log") as (process_b, base_b),
    ):
        _wait_ready(base_a, process_a, tmp_path / "a.log")
        _wait_ready(base_b, process_b, tmp_path / "b.log")
        bases = [base_a, base_b]

        # Concurrent clients on both replicas: diagnoses now, and jobs.
        with ThreadPoolExecutor(max_workers=8) as clients:
            now = [
                clients.submit(_post, bases[n % 2], SYNC_LINES[n % len(SYNC_LINES)])
                for n in range(16)
            ]
            jobs = [clients.submit(_post, bases[n % 2], small_job, job=True) for n in range(6)]
            answered = [f.result() for f in now]
            accepted = [f.result() for f in jobs]
        assert [r.status_code for r in answered] == [200] * 16, [r.text for r in answered]
        assert [r.status_code for r in accepted] == [202] * 6, [r.text for r in accepted]
        recorded = {r.json()["id"] for r in answered}
        job_ids = [r.json()["id"] for r in accepted]

        # Long jobs, then replica a frozen while the store shows it holding one, and killed.
        long_ids = [_post(bases[n % 2], long_job, job=True).json()["id"] for n in range(6)]
        job_ids += long_ids
        victim = None
        deadline = time.monotonic() + 300
        while victim is None:
            assert time.monotonic() < deadline, "replica a never held a job"
            held = _held_by(url, process_a.pid)
            if held:
                process_a.send_signal(signal.SIGSTOP)
                still = set(held) & set(_held_by(url, process_a.pid))
                if still:
                    victim = sorted(still)[0]
                    break
                process_a.send_signal(signal.SIGCONT)
            time.sleep(0.02)
        process_a.kill()
        process_a.wait(timeout=30)

        # Clients keep using the live replica while it finishes everything.
        later = [_post(base_b, line) for line in SYNC_LINES]
        assert [r.status_code for r in later] == [200] * len(later)
        recorded |= {r.json()["id"] for r in later}
        ended = {job_id: _finished(base_b, job_id) for job_id in job_ids}
        assert all(job["state"] == "done" for job in ended.values()), ended
        assert ended[victim]["attempts"] == 2  # run again after its replica died

        # Every answered diagnosis and every job recorded exactly once, whole.
        store = open_store(url)
        try:
            assert store.count() == len(recorded) + len(job_ids)
            incidents = store.incidents([*recorded, *job_ids])
            assert {i.id for i in incidents} == recorded | set(job_ids)
            for incident in incidents:
                assert incident.tenant == TENANT
                assert incident.diagnosis.inputs and incident.templates
            for job_id in job_ids:
                diagnosis = next(i.diagnosis for i in incidents if i.id == job_id)
                assert diagnosis.root_causes[0].originating_rank == 3
            with store.engine.connect() as connection:
                leftovers = connection.scalar(
                    text("SELECT count(*) FROM jobs WHERE state <> 'done' OR body IS NOT NULL")
                )
            assert leftovers == 0
        finally:
            store.close()
