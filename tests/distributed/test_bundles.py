"""Nodes' evidence bundles: each node scans its own logs, the service assembles the job.

The bundles of a job's nodes, sent in any order, give the diagnosis of the raw logs gathered
side by side by node (`denpex diagnose gpu-000 gpu-001`). A bundle is signed for its tenant:
unsigned, altered, another tenant's or incomplete sets are refused with the reason.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from denpex.api.app import create_app
from denpex.auth import signed_headers
from denpex.distributed.bundles import BundleName, make_bundle
from denpex.distributed.local import scan_settings
from denpex.hybrid.path import HybridPath
from denpex.hybrid.settings import HybridSettings
from denpex.store.nonces import StoreNonces
from denpex.store.store import store_url
from tests.api.test_service import TENANTS, _settings
from tests.conftest import REPO
from tests.distributed.test_fanout import OPTIONS, as_json, single_pass, without_timings

NODES = ["gpu-000", "gpu-001"]


def _bundle(job_2025: Path, node: str, tenant: str = "acme", secret: str | None = None) -> bytes:
    name = BundleName(tenant, "cluster-a", "train-4242", node)
    secret = secret or TENANTS[tenant].secret
    return make_bundle(str(job_2025 / node), name, secret, scan_settings(OPTIONS, digests=True))


def _post(client: TestClient, path: str, body: bytes = b"", query: str = "", tenant: str = "acme"):
    url = f"{path}?{query}" if query else path
    headers = signed_headers(TENANTS[tenant].secret, tenant, "POST", path, body, query)
    return client.post(url, content=body, headers=headers)


@pytest.fixture(scope="module")
def raw(job_2025: Path) -> dict:
    """The diagnosis of the nodes' raw logs, gathered side by side by node."""
    here = Path.cwd()
    os.chdir(job_2025)
    try:
        return as_json(single_pass(NODES))
    finally:
        os.chdir(here)


@pytest.mark.parametrize("with_store", [False, True])
def test_a_jobs_node_bundles_give_the_diagnosis_of_its_raw_logs(
    tmp_path: Path, job_2025: Path, raw: dict, with_store: bool
) -> None:
    hybrid = nonces = None
    if with_store:
        hybrid = HybridPath(
            HybridSettings(store_url=store_url(str(tmp_path / "s.sqlite"))), answer=False
        )
        nonces = StoreNonces(hybrid.store)
    with TestClient(create_app(_settings(), nonces, hybrid=hybrid)) as client:
        for node in reversed(NODES):  # the order they arrive in does not matter
            received = _post(client, "/v1/bundles", _bundle(job_2025, node))
            assert received.status_code == 201, received.text
        assert received.json()["nodes"] == NODES
        made = _post(client, "/v1/bundles/train-4242/diagnosis", query="nodes=2")
    assert made.status_code == 200, made.text
    document = made.json()
    assert document["nodes"] == NODES
    assert without_timings(document["diagnosis"]) == raw
    # gpu-001's kernel log prints no year: the bundle carried it read in the job's year too.
    assert document["diagnosis"]["root_causes"][0]["originating_host"] == "gpu-001"
    if with_store:
        assert hybrid.store.get(document["id"]).tenant == "acme"


def test_a_job_waits_for_the_nodes_it_needs(job_2025: Path) -> None:
    with TestClient(create_app(_settings())) as client:
        assert _post(client, "/v1/bundles", _bundle(job_2025, "gpu-000")).status_code == 201
        early = _post(client, "/v1/bundles/train-4242/diagnosis", query="nodes=2")
        assert early.status_code == 409
        assert early.json()["detail"] == "1 of the 2 nodes' bundles have arrived"
        assert _post(client, "/v1/bundles/other-job/diagnosis").status_code == 404


def test_bundles_not_signed_by_the_sending_tenant_are_refused(job_2025: Path) -> None:
    genuine = _bundle(job_2025, "gpu-000")
    forged = _bundle(job_2025, "gpu-000", secret="not-acme-secret-0123456789")
    signed = json.loads(gzip.decompress(genuine))
    altered = signed["payload"].replace("cluster-a", "cluster-b")
    tampered = gzip.compress(json.dumps({**signed, "payload": altered}).encode())
    globex = _bundle(job_2025, "gpu-000", tenant="globex")
    with TestClient(create_app(_settings())) as client:
        for body in (forged, tampered):
            refused = _post(client, "/v1/bundles", body)
            assert refused.status_code == 400
            assert refused.json()["detail"] == "the bundle is not signed by the tenant it names"
        crossed = _post(client, "/v1/bundles", globex)  # acme sends globex's bundle
        assert crossed.status_code == 403
        not_a_bundle = _post(client, "/v1/bundles", b"[rank0]: RuntimeError: hi\n")
        assert not_a_bundle.status_code == 400
        assert not_a_bundle.json()["detail"].startswith("not a gzip-compressed bundle")


def test_denpex_bundle_writes_a_signed_bundle_and_needs_the_secret(
    tmp_path: Path, job_2025: Path
) -> None:
    command = [
        sys.executable,
        "-m",
        "denpex",
        "bundle",
        str(job_2025 / "gpu-000"),
        "--job",
        "train-4242",
        "--tenant",
        "acme",
        "--node",
        "gpu-000",
        "-o",
        str(tmp_path / "gpu-000.denpex.gz"),
    ]
    environment = {k: v for k, v in os.environ.items() if k != "DENPEX_TENANT_SECRET"}
    unsigned = subprocess.run(
        command, capture_output=True, text=True, cwd=REPO, env=environment, timeout=300
    )
    assert unsigned.returncode == 2
    assert unsigned.stderr.strip() == (
        "denpex: the tenant's secret is needed in $DENPEX_TENANT_SECRET to sign the bundle"
    )
    environment["DENPEX_TENANT_SECRET"] = TENANTS["acme"].secret
    made = subprocess.run(
        command, capture_output=True, text=True, cwd=REPO, env=environment, timeout=300
    )
    assert made.returncode == 0, made.stderr
    written = (tmp_path / "gpu-000.denpex.gz").read_bytes()
    with TestClient(create_app(_settings())) as client:
        assert _post(client, "/v1/bundles", written).status_code == 201


def test_a_bundle_is_kept_with_its_secrets_redacted_and_still_diagnosed(
    tmp_path: Path, job_2025: Path
) -> None:
    """A node's bundle may wait in the store for days (for the job's other nodes): it is kept
    with every secret the incident store redacts replaced (each kind tests/hybrid/test_redact.py
    feeds), and the job is diagnosed from what is kept."""
    import shutil
    import sqlite3
    from contextlib import closing

    from denpex.store.schema import BundleRow
    from denpex.store.store import sqlite_path
    from tests.hybrid.test_redact import EVERY_OTHER_KIND, SECRET_VALUES, SECRETS_LOG

    node = tmp_path / "gpu-000"
    shutil.copytree(job_2025 / "gpu-000", node)
    lines = [f"[rank1]: ERROR {key} rejected: {value}" for key, value in EVERY_OTHER_KIND.items()]
    (node / "fetch.log").write_text(SECRETS_LOG + "\n".join(lines) + "\n")
    secrets = [
        *SECRET_VALUES,
        *(v.removeprefix("WANDB_API_KEY=") for v in EVERY_OTHER_KIND.values()),
    ]
    sent = _bundle(tmp_path, "gpu-000")
    carried = [s for s in secrets if s in gzip.decompress(sent).decode()]
    assert carried == secrets, "the bundle as the node sends it holds every secret"
    url = store_url(str(tmp_path / "s.sqlite"))
    hybrid = HybridPath(HybridSettings(store_url=url), answer=False)
    with TestClient(create_app(_settings(), StoreNonces(hybrid.store), hybrid=hybrid)) as client:
        assert _post(client, "/v1/bundles", sent).status_code == 201
        made = _post(client, "/v1/bundles/train-4242/diagnosis")
    assert made.status_code == 200, made.text
    assert made.json()["diagnosis"]["root_causes"], "the job is diagnosed from the kept bundle"
    database = sqlite_path(url)
    assert database is not None
    with closing(sqlite3.connect(database)) as connection:
        kept = [
            gzip.decompress(body).decode()
            for (body,) in connection.execute(f"SELECT body FROM {BundleRow.__tablename__}")
        ]
    assert len(kept) == 1 and "ERROR openaikey rejected: " in kept[0]
    for secret in carried:
        assert secret not in kept[0], secret
        assert secret[-8:] not in kept[0], f"part of {secret} (a masked template?)"
