"""The API as a service: the CLI's engine per tenant, jobs, reads, hang triage, Slack, docs."""

from __future__ import annotations

import io
import json
import os
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest
from fastapi.testclient import TestClient

from denpex.api.app import ApiSettings, create_app
from denpex.api.routes_slack import slack_signature
from denpex.auth import signed_headers, tenants_from_config
from denpex.hybrid.path import HybridPath
from denpex.hybrid.settings import HybridSettings
from denpex.store.nonces import StoreNonces
from denpex.store.store import store_url
from tests.conftest import BAD_SAMPLE
from tests.hang.conftest import case_dir

TENANTS = tenants_from_config(
    {
        "acme": "acme-secret-0123456789",
        "globex": "globex-secret-0123456789",
        "hooli": {"secret": "hooli-secret-0123456789", "features": ["hang"]},
        "initrode": {"secret": "initrode-secret-012345", "features": ["diagnose"]},
    }
)
SLACK_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
CACHE = Path(os.environ["DENPEX_CACHE_DIR"])


def _settings(**overrides: object) -> ApiSettings:
    return ApiSettings(tenants=TENANTS, cache_dir=CACHE, **overrides)  # type: ignore[arg-type]


def _signed(
    method: str, path: str, body: bytes = b"", query: str = "", tenant: str = "acme"
) -> dict[str, str]:
    return signed_headers(TENANTS[tenant].secret, tenant, method, path, body, query)


def _get(client: TestClient, path: str, query: str = "", tenant: str = "acme"):
    url = f"{path}?{query}" if query else path
    return client.get(url, headers=_signed("GET", path, b"", query, tenant))


def _post(client: TestClient, path: str, body: bytes, query: str = "", tenant: str = "acme"):
    url = f"{path}?{query}" if query else path
    return client.post(url, content=body, headers=_signed("POST", path, body, query, tenant))


def _tar(folder: Path, arcname: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(folder, arcname=arcname)
    return buffer.getvalue()


BUNDLE = _tar(BAD_SAMPLE, "job")


@pytest.fixture(scope="module")
def store_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    return store_url(str(tmp_path_factory.mktemp("store") / "incidents.sqlite"))


def _replica(url: str, **overrides: object) -> TestClient:
    """One API process on the shared store: its own hybrid path, store handle and nonces."""
    path = HybridPath(HybridSettings(store_url=url), answer=False)
    app = create_app(
        _settings(slack_signing_secret=SLACK_SECRET, slack_tenant="acme", **overrides),
        StoreNonces(path.store),
        hybrid=path,
    )
    return TestClient(app)


@pytest.fixture(scope="module")
def replicas(store_file: str) -> Iterator[tuple[TestClient, TestClient]]:
    with _replica(store_file, job_threshold_bytes=64 * 1024) as one, _replica(store_file) as two:
        yield one, two


def test_a_request_replayed_to_another_replica_sharing_the_store_is_refused(replicas) -> None:
    one, two = replicas
    body = b"[rank1]: RuntimeError: replayed across replicas\n"
    headers = _signed("POST", "/v1/diagnoses", body)
    assert one.post("/v1/diagnoses", content=body, headers=headers).status_code == 200
    replayed = two.post("/v1/diagnoses", content=body, headers=headers)
    assert replayed.status_code == 401
    assert "already used" in replayed.json()["detail"]


def test_a_diagnosis_is_recorded_for_its_tenant_and_read_back_by_any_replica(replicas) -> None:
    one, two = replicas
    made = _post(one, "/v1/diagnoses", b"[rank1]: RuntimeError: recorded\n")
    assert made.status_code == 200, made.text
    diagnosis_id = made.json()["id"]
    path = f"/v1/diagnoses/{diagnosis_id}"
    assert made.json()["links"]["self"] == path
    read = _get(two, path)
    assert read.status_code == 200, read.text
    assert read.json()["summary"] == made.json()["diagnosis"]["summary"]
    stranger = _get(two, path, tenant="globex")
    assert stranger.status_code == 404
    assert stranger.headers["content-type"] == "application/problem+json"


def test_a_large_body_becomes_a_job_whose_diagnosis_reads_in_every_format(replicas) -> None:
    one, _ = replicas
    headers = {**_signed("POST", "/v1/diagnoses", BUNDLE), "Prefer": "respond-async"}
    accepted = one.post("/v1/diagnoses", content=BUNDLE, headers=headers)
    assert accepted.status_code == 202, accepted.text
    status_url = accepted.headers["location"]
    assert status_url == accepted.json()["links"]["self"]
    deadline = time.monotonic() + 60
    while (job := _get(one, status_url).json())["state"] in ("queued", "running"):
        assert time.monotonic() < deadline, job
        time.sleep(0.1)
    assert job["state"] == "done", job
    diagnosis_url = job["links"]["diagnosis"]
    as_json = _get(one, diagnosis_url).json()
    assert as_json["root_causes"][0]["originating_rank"] == 3
    expected = {
        "markdown": ("text/markdown", "rank 3"),
        "html": ("text/html", "rank 3"),
        "slack": ("application/json", '"type": "header"'),
    }
    for name, (media, needle) in expected.items():
        response = _get(one, diagnosis_url, f"format={name}")
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith(media)
        assert needle in response.text, name


def test_a_body_over_the_job_threshold_is_answered_202_without_waiting(replicas) -> None:
    one, _ = replicas
    body = b"[rank0]: RuntimeError: big\n" * 4000  # over the 64 KiB threshold of this replica
    response = _post(one, "/v1/diagnoses", body)
    assert response.status_code == 202
    assert response.json()["state"] in ("queued", "running", "done")


def test_when_every_job_slot_is_taken_a_job_is_refused_with_retry_after() -> None:
    with TestClient(create_app(_settings(max_queued_jobs=0, job_threshold_bytes=0))) as client:
        response = _post(client, "/v1/diagnoses", b"[rank0]: RuntimeError: busy\n")
    assert response.status_code == 503
    assert response.headers["retry-after"] == "30"
    assert "retry later" in response.json()["detail"]


def test_jobs_whose_bodies_would_pass_the_queued_bytes_limit_are_refused() -> None:
    settings = _settings(job_threshold_bytes=0, max_queued_bytes=1000)
    with TestClient(create_app(settings)) as client:
        response = _post(client, "/v1/diagnoses", b"[rank0]: RuntimeError: big\n" * 100)
    assert response.status_code == 503
    assert "of the 1000 allowed; retry later" in response.json()["detail"]


def test_an_unknown_format_or_id_is_a_problem_document(replicas) -> None:
    one, _ = replicas
    missing = "0" * 32
    assert _get(one, f"/v1/diagnoses/{missing}").status_code == 404
    assert _get(one, f"/v1/diagnoses/{missing}", "format=pdf").status_code == 400
    assert _get(one, "/v1/diagnoses/not-an-id").status_code == 422
    assert _get(one, f"/v1/jobs/{missing}").status_code == 404


# hang triage ---------------------------------------------------------------------------------

HANG_QUERY = urlencode({"job": "slurm-4242", "scheduler": "slurm", "world_size": "4"})
DUMPS = _tar(case_dir("withheld_one") / "dumps", "dumps")


def test_every_ranks_dump_with_the_job_identity_names_the_culprit(replicas) -> None:
    one, _ = replicas
    response = _post(one, "/v1/hangs", DUMPS, HANG_QUERY, tenant="hooli")
    assert response.status_code == 200, response.text
    document = response.json()
    assert document["job"] == {"id": "slurm-4242", "world_size": 4, "scheduler": "slurm"}
    top = document["report"]["candidates"][0]
    assert (top["kind"], top["ranks"]) == ("never_entered", [2])
    assert document["rendered"].startswith("hang triage: hang_found")


def test_hang_triage_is_refused_with_403_outside_the_plan(replicas) -> None:
    one, _ = replicas
    response = _post(one, "/v1/hangs", DUMPS, HANG_QUERY, tenant="initrode")
    assert response.status_code == 403
    assert "does not include hang" in response.json()["detail"]


def test_an_archive_without_dumps_is_a_400_that_says_so(replicas) -> None:
    one, _ = replicas
    response = _post(one, "/v1/hangs", BUNDLE, HANG_QUERY)
    assert response.status_code == 400
    assert "Flight Recorder dump" in response.json()["detail"]


# Slack -----------------------------------------------------------------------------------------


def _slack(client: TestClient, text: str, *, timestamp: int | None = None, secret=SLACK_SECRET):
    body = urlencode({"command": "/denpex", "text": text, "user_id": "U024BE7LH"}).encode()
    stamp = str(timestamp or int(time.time()))
    headers = {
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": slack_signature(secret, stamp, body),
        "Content-Type": "application/x-www-form-urlencoded",
    }
    return client.post("/v1/slack/commands", content=body, headers=headers), body, headers


def test_a_slash_command_signed_by_slack_is_answered_in_block_kit(replicas) -> None:
    one, two = replicas
    response, _, _ = _slack(one, (BAD_SAMPLE / "launcher.log").read_text())
    assert response.status_code == 200, response.text
    message = response.json()
    assert message["response_type"] == "ephemeral"
    assert message["blocks"][0]["type"] == "header"
    assert message["blocks"][0]["text"]["text"].startswith("denpex: ")
    assert "rank 3" in json.dumps(message["blocks"])
    show = message["blocks"][-1]["elements"][0]["text"]
    shown, _, _ = _slack(two, show.strip("`").removeprefix("/denpex "))
    assert shown.json()["blocks"][0] == message["blocks"][0]


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"secret": "not-the-signing-secret-000000"}, "not signed with the Slack signing secret"),
        ({"timestamp": int(time.time()) - 600}, "older than five minutes"),
    ],
)
def test_a_slash_command_not_signed_by_slack_or_stale_is_refused(replicas, change, reason) -> None:
    one, _ = replicas
    response, _, _ = _slack(one, "help", **change)
    assert response.status_code == 401
    assert reason in response.json()["detail"]


def test_a_replayed_slash_command_is_refused(replicas) -> None:
    one, two = replicas
    first, body, headers = _slack(one, "help")
    assert first.status_code == 200
    again = two.post("/v1/slack/commands", content=body, headers=headers)
    assert again.status_code == 401 and "replay" in again.json()["detail"]


def test_without_a_signing_secret_the_slash_command_does_not_exist() -> None:
    with TestClient(create_app(_settings())) as client:
        response, _, _ = _slack(client, "help")
    assert response.status_code == 404


# docs ------------------------------------------------------------------------------------------


def test_the_api_docs_load_only_from_this_server(replicas) -> None:
    one, _ = replicas
    page = one.get("/docs")
    assert page.status_code == 200
    assert "/assets/swagger/swagger-ui-bundle.js" in page.text
    assert "http://" not in page.text and "https://" not in page.text, "no external URL"
    for asset in ("swagger-ui-bundle.js", "swagger-ui.css", "favicon.png"):
        assert one.get(f"/assets/swagger/{asset}").status_code == 200, asset
    described = one.get("/openapi.json").json()["paths"]
    assert {"/v1/diagnoses", "/v1/diagnoses/{diagnosis_id}", "/v1/jobs/{job_id}"} <= set(described)
    assert {"/v1/hangs", "/v1/slack/commands", "/healthz", "/readyz", "/metrics"} <= set(described)


# the event loop --------------------------------------------------------------------------------


@pytest.mark.parametrize("door", ["POST /v1/diagnoses", "Slack slash command"])
def test_a_diagnosis_in_progress_never_holds_up_the_event_loop(monkeypatch, door) -> None:
    """While one diagnosis is held mid-way (as a long CPU-bound one holds its thread), other
    requests are still answered: diagnosing runs in worker threads, not on the event loop."""
    import threading

    from denpex.api import jobs

    started, release = threading.Event(), threading.Event()
    real_diagnose = jobs.diagnose_evidence

    def held_diagnose(*args, **kwargs):
        started.set()
        assert release.wait(60), "the test never released the diagnosis"
        return real_diagnose(*args, **kwargs)

    monkeypatch.setattr(jobs, "diagnose_evidence", held_diagnose)
    settings = _settings(slack_signing_secret=SLACK_SECRET, slack_tenant="acme")
    log = (BAD_SAMPLE / "launcher.log").read_text()
    with TestClient(create_app(settings)) as client:
        answers: list[int] = []

        def diagnose() -> None:
            if door == "Slack slash command":
                answers.append(_slack(client, log)[0].status_code)
            else:
                answers.append(_post(client, "/v1/diagnoses", log.encode()).status_code)

        worker = threading.Thread(target=diagnose)
        worker.start()
        try:
            assert started.wait(60), "the diagnosis never started"
            began = time.monotonic()
            health = client.get("/healthz")
            other = _post(client, "/v1/diagnoses", b"x", "render=nothing")
            waited = time.monotonic() - began
            still_held = not release.is_set() and worker.is_alive()
        finally:
            release.set()
            worker.join(60)
        assert health.status_code == 200 and other.status_code == 400
        assert still_held and waited < 10, waited
        assert answers == [200]
