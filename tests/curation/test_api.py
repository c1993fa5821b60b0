"""The curation loop over the HTTP API: the same resources as `denpex curate`, signed."""

from __future__ import annotations

import json

import yaml
from fastapi.testclient import TestClient

from denpex.api.app import ApiSettings, create_app
from denpex.auth import signed_headers, tenants_from_config
from tests.curation.conftest import LMDEPLOY, Recorded

SECRET = "acme-secret-0123456789"
VIEWER = "viewer-secret-0123456789"


def _client(recorded: Recorded) -> TestClient:
    settings = ApiSettings(
        tenants=tenants_from_config(
            {"acme": SECRET, "viewer": {"secret": VIEWER, "features": ["diagnose"]}}
        ),
        cache_dir=recorded.settings.cache_dir,
        overlay_dir=recorded.settings.overlay_dir,
    )
    return TestClient(create_app(settings, curation=recorded.settings))


def _call(client: TestClient, method: str, path: str, body: bytes = b"", *, query: str = ""):
    tenant, secret = ("viewer", VIEWER) if "viewer" in path else ("acme", SECRET)
    path = path.replace("?viewer", "")
    headers = signed_headers(secret, tenant, method, path, body, query)
    url = f"{path}?{query}" if query else path
    return client.request(method, url, content=body, headers=headers)


def test_a_curator_closes_the_loop_over_the_api(recorded: Recorded) -> None:
    incident = recorded.ids["lmdeploy-3992.log"]
    with _client(recorded) as client:
        queue = _call(client, "GET", "/v1/curation/queue")
        assert queue.status_code == 200, queue.text
        (group,) = queue.json()["groups"]
        assert group["recurrence"] == 2 and group["similar"][0]["label"] == "process_killed"
        assert _call(client, "GET", "/v1/curation/queue?viewer").status_code == 403

        confirmed = _call(
            client,
            "POST",
            f"/v1/curation/incidents/{incident}/confirm",
            json.dumps({"class": "unsupported_gpu_arch", "by": "oncall"}).encode(),
        )
        assert confirmed.json()["curation_state"] == "confirmed"
        drafted = _call(client, "POST", f"/v1/curation/incidents/{incident}/propose").json()
        assert drafted["signature_id"] == "triton.out_of_resources"
        draft = drafted["draft"].encode()

        tested = _call(client, "POST", "/v1/curation/backtest", draft).json()
        assert len(tested["incidents"]) == 3 and tested["refusals"] == []

        loose = yaml.safe_load(draft)
        loose.update(
            title="Triton ran out of a GPU resource",
            patterns=[{"regex": r"(?:OutOfResources|Starting elastic_operator)"}],
            examples={
                "match": [loose["examples"]["match"][0]["line"]],
                "no_match": ["RuntimeError: CUDA error: out of memory"],
            },
        )
        refused = _call(client, "POST", "/v1/curation/promote", yaml.safe_dump(loose).encode())
        assert refused.status_code == 409
        assert refused.headers["content-type"] == "application/problem+json"
        assert any("healthy log line(s)" in reason for reason in refused.json()["reasons"]), (
            refused.text
        )

        promoted = _call(client, "POST", "/v1/curation/promote", draft, query="by=oncall")
        assert promoted.status_code == 200, promoted.text
        assert promoted.json()["overlay_version"] == 1

        # The app reloaded its library: the next request is settled by the new signature.
        body = LMDEPLOY.read_bytes()
        diagnosed = _call(client, "POST", "/v1/diagnoses", body).json()["diagnosis"]
        assert diagnosed["status"] == "confident"
        assert diagnosed["root_causes"][0]["signature_id"] == "triton.out_of_resources"
        assert " overlay 1+" in diagnosed["provenance"]["rules_version"]

        missing = _call(client, "POST", "/v1/curation/incidents/deadbeef/reject")
        assert missing.status_code == 404
