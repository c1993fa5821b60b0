"""A backfill as a Celery job on real `denpex jobs worker` processes over the local Redis.

The job's parts are the stored incidents of tests/curation/novel and two past jobs' folders;
the first worker is frozen the moment the result backend shows one of its tasks started,
checked, then killed with its pool: a worker started afterwards takes the unacknowledged task
up once the visibility timeout has passed, and the report is the one the local pool gives.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from denpex.curation.backfill import backfill_parts
from denpex.distributed.batch import run_local
from tests.distributed.test_batch import Curated, curated, past_jobs  # noqa: F401
from tests.distributed.test_celery import _app, _running, _worker

pytestmark = pytest.mark.slow


def test_a_backfill_job_survives_its_worker_being_killed_mid_part(
    tmp_path: Path,
    curated: Curated,  # noqa: F811
    past_jobs: Path,  # noqa: F811
) -> None:
    from denpex.distributed import celery_jobs

    settings = replace(curated.settings, rules_dir=None)
    parts = backfill_parts(curated.store, [past_jobs])
    context = {"settings": settings.as_json()}
    queue = f"denpex-test-{uuid.uuid4().hex[:8]}"
    log = tmp_path / "worker.log"
    runs = len(parts)
    with _app(queue) as app, _worker(queue, log) as first:
        job_id = celery_jobs.submit_parts(app, "backfill", parts, context, runs=runs)
        victim = None
        deadline = time.monotonic() + 300
        while victim is None:
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            started = [n for n in range(runs) if _running(app, f"{job_id}.part.{n}")]
            if started:
                os.killpg(first.pid, signal.SIGSTOP)
                still = [n for n in started if _running(app, f"{job_id}.part.{n}")]
                if still:
                    victim = still[0]
                    break
                os.killpg(first.pid, signal.SIGCONT)
            time.sleep(0.02)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
        with _worker(queue, log) as second:
            seen: list[celery_jobs.JobProgress] = []
            ended = celery_jobs.wait(app, job_id, timeout_s=600, on_progress=seen.append)
            _, result = celery_jobs.task_state(app, f"{job_id}.reduce")
            # The part the killed worker held was done by the worker started after it.
            doer = result["done_by"][str(victim)]
            assert os.getpgid(int(doer.rsplit(":", 1)[1])) == second.pid
    assert ended.state == "done", (ended, log.read_text()[-3000:])
    assert (ended.kind, ended.parts_done, ended.items_done) == ("backfill", runs, len(parts))
    assert any(p.state == "scanning" and p.parts_done < runs for p in seen)
    assert ended.report == run_local("backfill", parts, context)
