"""Jobs in the store the replicas share: a job a dead replica held is run again by a live one,
and its diagnosis is recorded once under the job's id."""

from __future__ import annotations

import time
from pathlib import Path

from fastapi.testclient import TestClient

from denpex.api.app import create_app
from denpex.hybrid.path import HybridPath
from denpex.hybrid.settings import HybridSettings
from denpex.store.jobs import StoreJobs
from denpex.store.nonces import StoreNonces
from denpex.store.sealing import seal_for
from denpex.store.store import open_store, store_url
from tests.api.test_service import BUNDLE, _get, _settings, _signed


def _replica(url: str) -> TestClient:
    path = HybridPath(HybridSettings(store_url=url), answer=False)
    settings = _settings(job_lease_s=1.5, job_poll_s=0.1, job_workers=1)
    return TestClient(create_app(settings, StoreNonces(path.store), hybrid=path))


def _finished(client: TestClient, job_id: str, timeout_s: float = 60) -> dict:
    deadline = time.monotonic() + timeout_s
    while (job := _get(client, f"/v1/jobs/{job_id}").json())["state"] in ("queued", "running"):
        assert time.monotonic() < deadline, job
        time.sleep(0.1)
    return job


def test_a_job_whose_replica_died_is_run_again_by_another_and_recorded_once(
    tmp_path: Path,
) -> None:
    url = store_url(str(tmp_path / "incidents.sqlite"))
    job_id = "ab" * 16
    # A replica queued the job, claimed it and died: its lease is never renewed.
    queued_in = open_store(url)
    dead = StoreJobs(queued_in, seal_for(None, queued_in))  # the key file beside the database
    dead.submit(job_id, "acme", BUNDLE, max_jobs=10, max_bytes=1 << 30)
    assert dead.claim("dead-host:4242:0", lease_s=1.0) is not None
    with _replica(url) as live:
        job = _finished(live, job_id)
        assert job["state"] == "done", job
        assert job["attempts"] == 2
        diagnosis = _get(live, job["links"]["diagnosis"]).json()
    assert diagnosis["root_causes"][0]["originating_rank"] == 3
    store = open_store(url)
    assert store.get(job_id).tenant == "acme"
    assert store.count() == 1
    assert dead.get(job_id).claimed_by != "dead-host:4242:0"  # the live replica ended it


def test_a_job_queued_by_one_replica_is_read_by_another(tmp_path: Path) -> None:
    url = store_url(str(tmp_path / "incidents.sqlite"))
    with _replica(url) as one, _replica(url) as two:
        headers = {**_signed("POST", "/v1/diagnoses", BUNDLE), "Prefer": "respond-async"}
        accepted = one.post("/v1/diagnoses", content=BUNDLE, headers=headers)
        assert accepted.status_code == 202, accepted.text
        job = _finished(two, accepted.json()["id"])
        assert job["state"] == "done" and job["attempts"] == 1
        assert _get(two, job["links"]["diagnosis"]).status_code == 200
        assert _get(one, f"/v1/jobs/{job['id']}", tenant="globex").status_code == 404
