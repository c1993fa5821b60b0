"""`denpex serve`: a misconfiguration is one line and exit 2, before anything listens."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO


def _serve(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [sys.executable, "-m", "denpex", "serve", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=False,
        env={**os.environ, **(env or {})},
    )


def test_a_slack_tenant_without_the_signing_secret_is_one_line(tmp_path: Path) -> None:
    tenants = tmp_path / "tenants.json"
    tenants.write_text(json.dumps({"acme": "acme-secret-0123456789"}))
    result = _serve("--tenants", str(tenants), "--slack-tenant", "acme")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "denpex: --slack-tenant needs Slack's signing secret in $DENPEX_SLACK_SIGNING_SECRET"
    ]


def test_a_slack_tenant_that_is_not_configured_is_one_line(tmp_path: Path) -> None:
    tenants = tmp_path / "tenants.json"
    tenants.write_text(json.dumps({"acme": "acme-secret-0123456789"}))
    result = _serve(
        "--tenants",
        str(tenants),
        "--slack-tenant",
        "initech",
        env={"DENPEX_SLACK_SIGNING_SECRET": "8f742231b10e8888abcd99yyyzzz85a5"},
    )
    assert result.returncode == 2
    assert "--slack-tenant 'initech' is not a tenant in" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_store_that_cannot_be_opened_stops_serve_before_it_listens(tmp_path: Path) -> None:
    # A replica without the store its peers share would keep jobs and diagnoses to itself.
    tenants = tmp_path / "tenants.json"
    tenants.write_text(json.dumps({"acme": "acme-secret-0123456789"}))
    result = _serve(
        "--tenants",
        str(tenants),
        "--store",
        "postgresql://denpex@127.0.0.1:1/none?connect_timeout=2",
    )
    assert result.returncode == 2
    assert result.stderr.strip().startswith("denpex: cannot open store postgresql")
    assert len(result.stderr.strip().splitlines()) == 1
