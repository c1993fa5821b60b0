"""Back-tests and backfills split into parts: in this process, on a local process pool and as a
Celery job on the local Redis, the same report.

The store holds the real incidents of tests/curation/novel (Triton's shared-memory limit),
recorded with the library as it stood before Triton's catalog; the draft is the one `propose`
writes from the first of them once confirmed. The Celery job runs on a worker inside this
test process (celery.contrib.testing) over the real broker; tests/distributed/test_batch_workers.py
runs it on real `denpex jobs worker` processes.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from denpex.curation.backfill import DIAGNOSIS_FILE, backfill, backfill_parts
from denpex.curation.backtest import Backtest, backtest, backtest_parts
from denpex.curation.promote import current_library
from denpex.curation.propose import propose
from denpex.curation.settings import CurationSettings
from denpex.distributed.batch import report_of, run_local
from denpex.pipeline import DiagnoseOptions, diagnose
from denpex.signatures.signature import Signature
from denpex.store.store import IncidentStore, open_store, store_url
from tests.curation.conftest import (
    LMDEPLOY,
    MONKEYOCR,
    SGLANG,
    before_triton_matcher,
    curation_settings,
    record,
)

BROKER = os.environ.get("DENPEX_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@dataclass
class Curated:
    store: IncidentStore
    settings: CurationSettings
    ids: dict[str, str]
    draft: Signature


@pytest.fixture(scope="module")
def curated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Curated]:
    folder = tmp_path_factory.mktemp("curated")
    store = open_store(store_url(str(folder / "incidents.db")))
    ids = record(store, [LMDEPLOY, MONKEYOCR]) | record(store, [SGLANG], threshold=0.4)
    settings = curation_settings(folder, store)
    store.confirm(ids["lmdeploy-3992.log"], "unsupported_gpu_arch", by="oncall")
    draft = propose(ids["lmdeploy-3992.log"], store, current_library(settings), settings)
    yield Curated(store, settings, ids, draft.signature)
    store.close()


def _context(curated: Curated) -> dict[str, Any]:
    return {
        "draft": curated.draft.model_dump(mode="json"),
        "settings": curated.settings.as_json(),
    }


def test_the_settings_and_the_draft_cross_to_a_worker_as_plain_data(curated: Curated) -> None:
    document = json.loads(json.dumps(_context(curated)))
    assert CurationSettings.from_json(document["settings"]) == curated.settings
    assert Signature.model_validate(document["draft"]) == curated.draft


def test_a_backtest_on_a_local_process_pool_is_the_backtest_in_this_process(
    curated: Curated,
) -> None:
    parts = backtest_parts(curated.store, curated.settings)
    here = backtest(
        curated.draft, current_library(curated.settings), curated.store, curated.settings
    )
    seen: list[tuple[int, int]] = []
    pooled = run_local(
        "backtest", parts, _context(curated), workers=2, progress=lambda *n: seen.append(n)
    )
    assert pooled == json.loads(json.dumps(here.as_dict(), default=str))
    # Every stored incident is a part; each of the three is matched and changed.
    assert [p for p in parts if "incident" in p] == [{"incident": i} for i in curated.ids.values()]
    assert {h.where for h in here.incidents} == set(curated.ids.values())
    assert all(h.changes for h in here.incidents)
    assert seen[-1] == (len(parts), len(parts))
    assert isinstance(report_of("backtest", pooled), Backtest)


@pytest.fixture(scope="module")
def past_jobs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two past jobs' folders as `denpex run` leaves them: the log and the diagnosis.json the
    library before Triton's catalog gave."""
    root = tmp_path_factory.mktemp("past-jobs")
    matcher = before_triton_matcher()
    for log in (LMDEPLOY, MONKEYOCR):
        job = root / log.stem
        job.mkdir()
        (job / "stderr.log").write_bytes(log.read_bytes())
        diagnosis = diagnose([str(job)], DiagnoseOptions(), matcher=matcher)
        (job / DIAGNOSIS_FILE).write_text(diagnosis.model_dump_json())
    return root


def test_a_backfill_says_what_the_current_library_answers_differently(
    curated: Curated, past_jobs: Path
) -> None:
    # The library now holds Triton's catalog: the packaged library as it is.
    now = replace(curated.settings, rules_dir=None)
    report = backfill(curated.store, now, [past_jobs])
    where = {c.where: c for c in report.changes}
    assert set(where) == set(curated.ids.values()) | {
        str(past_jobs / "lmdeploy-3992"),
        str(past_jobs / "monkeyocr-86"),
    }
    # The two incidents the rules could name only as an uncaught exception and the two past
    # jobs: Triton's catalog names them now (the third incident, settled by the shell's Killed
    # line, is listed too).
    named = [
        *(curated.ids[log.name] for log in (LMDEPLOY, MONKEYOCR)),
        *(str(past_jobs / log.stem) for log in (LMDEPLOY, MONKEYOCR)),
    ]
    for key in named:
        change = where[key]
        assert change.before is not None and change.after is not None, change
        assert (change.before.status, change.before.failure_class, change.before.signature_id) == (
            "unknown",
            "python_exception",
            "python.uncaught_exception",
        )
        assert (
            change.after.signature_id == "triton_cat.out_of_resource_required_hardware_limit_4408c9"
        ), change
        assert change.changed
    pooled = run_local(
        "backfill",
        backfill_parts(curated.store, [past_jobs]),
        {"settings": now.as_json()},
        workers=2,
    )
    assert pooled == report.as_dict()


@pytest.fixture(scope="module")
def broker_app() -> Iterator[Any]:
    redis = pytest.importorskip("redis", reason="Celery jobs on Redis need the redis client")
    pytest.importorskip("celery", reason="Celery jobs need the celery extra")
    try:
        redis.Redis.from_url(BROKER, socket_connect_timeout=3).ping()
    except redis.RedisError as error:
        pytest.skip(f"Redis at {BROKER} is unreachable: {error}")
    from celery.contrib.testing.worker import start_worker

    from denpex.distributed import celery_jobs
    from denpex.distributed.commands import broker_app

    queue = f"denpex-test-{uuid.uuid4().hex[:8]}"
    app = broker_app(BROKER, queue)
    try:
        with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=30):
            yield app
    finally:
        celery_jobs.close(app)
        from tests.distributed.test_celery import drop_keys

        drop_keys(queue)


def test_a_backtest_job_on_celery_gives_the_local_pools_report_and_shows_progress(
    curated: Curated, broker_app: Any
) -> None:
    from denpex.distributed import celery_jobs

    parts = backtest_parts(curated.store, curated.settings)
    job = celery_jobs.submit_parts(broker_app, "backtest", parts, _context(curated), runs=3)
    seen: list[celery_jobs.JobProgress] = []
    ended = celery_jobs.wait(broker_app, job, timeout_s=600, on_progress=seen.append)
    assert ended.state == "done", ended.error
    assert (ended.kind, ended.parts, ended.parts_done) == ("backtest", 3, 3)
    assert ended.items_done == ended.items_total == len(parts)
    assert seen[0].items_total == len(parts)
    local = run_local("backtest", parts, _context(curated), workers=2)
    assert ended.report == local


def test_curate_backfill_shows_its_progress_and_what_changed(
    curated: Curated, past_jobs: Path, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from denpex.cli.main import app

    result = CliRunner().invoke(
        app,
        [
            "curate",
            "backfill",
            "--no-incidents",
            "--root",
            str(past_jobs),
            "--store",
            str(tmp_path / "unused.db"),
            "--overlay",
            str(tmp_path / "overlay"),
            "--backend",
            "re",
            "--workers",
            "2",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "backfill: 2 of 2 parts done" in result.stderr
    document = json.loads(result.stdout)
    assert (document["parts"], document["changed"]) == (2, 2)
