"""The HTTP API with a store answers as `denpex diagnose` does: the same best effort, queued."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

from fastapi.testclient import TestClient

from denpex.api.app import ApiSettings, create_app
from denpex.auth import signed_headers, tenants_from_config
from denpex.models import Status
from denpex.pipeline import DiagnoseOptions, diagnose
from tests.hybrid.support import answering_path, case_inputs

SECRET = "acme-secret-0123456789"
# Above every rules confidence: the rules stay unsure and the hybrid path answers.
UNSURE = 0.99


def _bundle(case: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for path in case_inputs(case):
            archive.add(path, arcname=f"job/{Path(path).name}")
    return buffer.getvalue()


def test_a_bot_gets_the_best_effort_the_command_line_gets(indexed) -> None:
    recorder, cases = indexed
    path = answering_path(recorder, exclude=[cases["ckpt-size"].incident_id], record=True)
    body = _bundle("ckpt-size")
    settings = ApiSettings(
        tenants=tenants_from_config({"acme": SECRET}),
        cache_dir=Path(os.environ["DENPEX_CACHE_DIR"]),
        confidence_threshold=UNSURE,
    )
    with TestClient(create_app(settings, hybrid=path)) as client:
        response = client.post(
            "/v1/diagnoses",
            content=body,
            headers=signed_headers(SECRET, "acme", "POST", "/v1/diagnoses", body, ""),
        )
    assert response.status_code == 200, response.text
    by_api = response.json()["diagnosis"]
    by_cli = diagnose(
        ["-"],
        DiagnoseOptions(confidence_threshold=UNSURE),
        stdin=io.BytesIO(body),
        hybrid=path,
    )
    assert by_cli.status is Status.best_effort
    assert by_api["status"] == by_cli.status.value
    assert [r["failure_class"] for r in by_api["root_causes"]] == [
        r.failure_class for r in by_cli.root_causes
    ]
    assert by_api["curation_id"] and by_api["curation_id"] != by_cli.curation_id
    assert recorder.store.get(by_api["curation_id"]) is not None
