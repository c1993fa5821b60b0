"""Large diagnoses as Celery jobs over the local Redis: real `denpex jobs worker` processes.

A job gives the single pass's diagnosis and shows its progress; a worker killed while it scans
(frozen the moment the result backend shows its task started, checked, then killed with its
pool) does not lose the job: a worker started afterwards takes the unacknowledged task up once
the visibility timeout has passed, and the diagnosis is the same.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.distributed.test_fanout import OPTIONS, as_json, single_pass

celery = pytest.importorskip("celery", reason="Celery jobs need the celery extra")
redis = pytest.importorskip("redis", reason="Celery jobs on Redis need the redis client")

pytestmark = pytest.mark.slow

BROKER = os.environ.get("DENPEX_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
VISIBILITY_S = 10


@pytest.fixture(scope="module", autouse=True)
def _redis_or_skip() -> None:
    try:
        redis.Redis.from_url(BROKER, socket_connect_timeout=3).ping()
    except redis.RedisError as error:
        pytest.skip(f"Redis at {BROKER} is unreachable: {error}")


@contextmanager
def _worker(queue: str, log: Path) -> Iterator[subprocess.Popen]:
    """A worker with one pool process, in its own process group (killed whole)."""
    with log.open("ab") as output:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "denpex",
                "jobs",
                "worker",
                "--broker",
                BROKER,
                "--queue",
                queue,
                "--concurrency",
                "1",
                "--visibility-timeout",
                str(VISIBILITY_S),
            ],
            cwd=REPO,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGCONT)
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


@contextmanager
def _app(queue: str) -> Iterator[Any]:
    from denpex.distributed import celery_jobs
    from denpex.distributed.commands import broker_app

    app = broker_app(BROKER, queue, visibility_timeout_s=VISIBILITY_S)
    try:
        yield app
    finally:
        celery_jobs.close(app)
        drop_keys(queue)


def drop_keys(queue: str) -> None:
    """Deletes what a test's jobs left in the shared Redis (results, the queue, its bindings):
    everything its app wrote is named after the queue (`broker_app`'s key prefix)."""
    client = redis.Redis.from_url(BROKER, socket_connect_timeout=3)
    keys = list(client.scan_iter(match=f"{queue}*", count=1000))
    if keys:
        client.delete(*keys)


def _running(app: Any, task_id: str) -> bool:
    from denpex.distributed.celery_jobs import task_state

    return task_state(app, task_id)[0] in ("STARTED", "PROGRESS")


def test_a_job_on_workers_gives_the_single_pass_diagnosis_and_shows_progress(
    tmp_path: Path, mixed_job: Path
) -> None:
    from denpex.distributed import celery_jobs

    queue = f"denpex-test-{uuid.uuid4().hex[:8]}"
    with _app(queue) as app, _worker(queue, tmp_path / "worker.log"):
        job_id = celery_jobs.submit(app, [str(mixed_job)], OPTIONS, parts=4)
        seen = []
        ended = celery_jobs.wait(app, job_id, timeout_s=300, on_progress=seen.append)
    assert ended.state == "done", (ended, (tmp_path / "worker.log").read_text()[-3000:])
    assert ended.parts == 4 and ended.parts_done == 4
    assert ended.bytes_scanned == ended.bytes_total > 0
    assert seen[0].state in ("queued", "scanning") and seen[0].parts == 4
    assert as_json(ended.diagnosis) == as_json(single_pass([str(mixed_job)]))


def test_a_poller_reads_each_finished_scan_part_once(
    tmp_path: Path, mixed_job: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from denpex.distributed import celery_jobs

    queue = f"denpex-test-{uuid.uuid4().hex[:8]}"
    with _app(queue) as app, _worker(queue, tmp_path / "worker.log"):
        job_id = celery_jobs.submit(app, [str(mixed_job)], OPTIONS, parts=4)
        ended = celery_jobs.wait(app, job_id, timeout_s=300)
        finished: set[int] = set()
        first = celery_jobs.progress_of(app, job_id, finished)
        read: list[str] = []
        meta = celery_jobs._meta
        monkeypatch.setattr(
            celery_jobs, "_meta", lambda app, task_id: read.append(task_id) or meta(app, task_id)
        )
        again = celery_jobs.progress_of(app, job_id, finished)
    assert ended.state == first.state == again.state == "done"
    assert finished == {0, 1, 2, 3}
    assert (again.parts_done, again.bytes_scanned) == (first.parts_done, first.bytes_scanned)
    assert read and not [task_id for task_id in read if ".scan." in task_id]
    assert as_json(again.diagnosis) == as_json(ended.diagnosis)


def test_a_finished_job_keeps_only_its_diagnosis_and_keeps_it_compressed(
    tmp_path: Path, mixed_job: Path
) -> None:
    from celery.backends.base import COMPRESSED_PAYLOAD_MAGIC

    from denpex.distributed import celery_jobs

    queue = f"denpex-test-{uuid.uuid4().hex[:8]}"
    with _app(queue) as app, _worker(queue, tmp_path / "worker.log"):
        job_id = celery_jobs.submit(app, [str(mixed_job)], OPTIONS, parts=4)
        ended = celery_jobs.wait(app, job_id, timeout_s=300)
        client = redis.Redis.from_url(BROKER, socket_connect_timeout=3)
        stored = {
            key.decode(): client.get(key)
            for key in client.scan_iter(match=f"{queue}*celery-task-meta-{job_id}*")
        }
        again = celery_jobs.progress_of(app, job_id)
    assert ended.state == again.state == "done", (tmp_path / "worker.log").read_text()[-3000:]
    # The scan parts' results (the job's evidence) went once the reduce had read them ...
    assert sorted(key.rsplit(job_id, 1)[1] for key in stored) == [".meta", ".reduce"]
    # ... and a reader arriving afterwards still sees every part done.
    assert (again.parts_done, again.bytes_scanned) == (4, ended.bytes_total)
    assert stored[next(k for k in stored if k.endswith(".reduce"))].startswith(
        COMPRESSED_PAYLOAD_MAGIC
    )
    assert as_json(again.diagnosis) == as_json(ended.diagnosis)


def test_a_job_survives_its_worker_being_killed_mid_scan(tmp_path: Path, job_2025: Path) -> None:
    from denpex.distributed import celery_jobs

    big = tmp_path / "big"
    big.mkdir()
    for log in sorted(job_2025.rglob("*.log")):  # each rank's log long enough to catch
        target = big / log.relative_to(job_2025)
        target.parent.mkdir(exist_ok=True)
        text = log.read_text()
        target.write_text(text if log.name == "kern.log" else text * 60)
    queue = f"denpex-test-{uuid.uuid4().hex[:8]}"
    log = tmp_path / "worker.log"
    parts = 9
    with _app(queue) as app, _worker(queue, log) as first:
        job_id = celery_jobs.submit(app, [str(big)], OPTIONS, parts=parts)
        victim = None
        deadline = time.monotonic() + 300
        while victim is None:
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            started = [n for n in range(parts) if _running(app, f"{job_id}.scan.{n}")]
            if started:
                os.killpg(first.pid, signal.SIGSTOP)
                still = [n for n in started if _running(app, f"{job_id}.scan.{n}")]
                if still:
                    victim = still[0]
                    break
                os.killpg(first.pid, signal.SIGCONT)
            time.sleep(0.02)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
        with _worker(queue, log) as second:
            ended = celery_jobs.wait(app, job_id, timeout_s=300)
            _, result = celery_jobs.task_state(app, f"{job_id}.reduce")
            # The task the killed worker held was scanned by the worker started after it.
            scanner = result["scanned_by"][str(victim)]
            assert os.getpgid(int(scanner.rsplit(":", 1)[1])) == second.pid
    assert ended.state == "done", (ended, log.read_text()[-3000:])
    assert as_json(ended.diagnosis) == as_json(single_pass([str(big)]))
