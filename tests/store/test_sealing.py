"""Queued job bodies are sealed at rest under a key that is not in the database: a replica with
another key, a body moved to another job and a key that cannot be one are refused, each in
words that say what to do."""

from __future__ import annotations

import stat
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from denpex.store.jobs import StoreJobs
from denpex.store.schema import JobRow, JobState
from denpex.store.sealing import KEY_FILE_SUFFIX, BodySeal, SealError, new_key, seal_for
from denpex.store.store import IncidentStore, open_store, sqlite_path, store_url
from tests.conftest import REPO

BODY = b"[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
ROOMY = {"max_jobs": 100, "max_bytes": 1 << 30}
JOB = "ab" * 16


def test_a_sealed_body_opens_under_its_key_and_job_only() -> None:
    seal = BodySeal(new_key())
    sealed = seal.seal(BODY, JOB)
    assert BODY not in sealed and seal.open(sealed, JOB) == BODY
    with pytest.raises(SealError, match="sealed under another key"):
        BodySeal(new_key()).open(sealed, JOB)
    with pytest.raises(SealError, match="sealed under another key"):
        seal.open(sealed, "cd" * 16)  # moved to another job's row
    with pytest.raises(SealError, match="not sealed"):
        seal.open(BODY, JOB)


@pytest.mark.parametrize("key", ["", "short", "!" * 44, "A" * 40])
def test_a_key_that_is_not_32_bytes_of_base64_is_refused_with_how_to_make_one(key: str) -> None:
    with pytest.raises(SealError, match="32 random bytes in URL-safe base64"):
        BodySeal(key)


def test_a_replica_with_another_key_fails_the_job_and_says_why(sqlite_store: IncidentStore) -> None:
    StoreJobs(sqlite_store, BodySeal(new_key())).submit(JOB, "acme", BODY, **ROOMY)
    other = StoreJobs(sqlite_store, BodySeal(new_key()))
    assert other.claim("replica-b:2", lease_s=30) is None
    record = other.get(JOB)
    assert record is not None and record.state == JobState.failed
    assert "DENPEX_JOB_BODY_KEY" in (record.failure_detail or "")
    assert sqlite_store.write(lambda session: session.get(JobRow, JOB).body) is None  # type: ignore[union-attr]


def test_a_sqlite_store_without_a_key_gets_an_owner_only_key_file_beside_it(
    tmp_path: Path,
) -> None:
    store = open_store(store_url(str(tmp_path / "incidents.sqlite")))
    database = sqlite_path(store.url)
    assert database is not None
    # Two processes starting at once: one writes the key, both use the same one.
    with ThreadPoolExecutor(max_workers=4) as pool:
        seals = list(pool.map(lambda _: seal_for(None, store), range(8)))
    key_file = Path(f"{database}{KEY_FILE_SUFFIX}")
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    sealed = seals[0].seal(BODY, JOB)
    assert all(seal.open(sealed, JOB) == BODY for seal in seals)
    assert key_file.read_text().strip() not in database.read_bytes().decode("latin-1")


@pytest.mark.postgres
def test_a_shared_postgresql_store_needs_the_key_named(postgres_store: IncidentStore) -> None:
    with pytest.raises(SealError, match="needs DENPEX_JOB_BODY_KEY, the same on every replica"):
        seal_for(None, postgres_store)
    assert seal_for(new_key(), postgres_store) is not None


def test_serve_with_a_key_that_cannot_be_one_stops_before_it_listens(tmp_path: Path) -> None:
    tenants = tmp_path / "tenants.json"
    tenants.write_text('{"acme": "acme-secret-0123456789"}')
    result = subprocess.run(
        [sys.executable, "-m", "denpex", "serve", "--tenants", str(tenants)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "DENPEX_DATA_DIR": str(tmp_path / "data"),
            "DENPEX_JOB_BODY_KEY": "not-a-key",
        },
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().startswith("denpex: a job body key is 32 random bytes")
    assert len(result.stderr.strip().splitlines()) == 1
