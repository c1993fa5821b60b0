"""Diagnosis jobs in the store: claimed by one worker of any replica, claimed again once the
lease of a worker that stopped runs out, finished only by the worker that holds them."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from denpex.store.jobs import QueueFull, StoreJobs
from denpex.store.schema import JobState
from denpex.store.sealing import BodySeal, new_key
from denpex.store.store import IncidentStore

BODY = b"[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
ROOMY = {"max_jobs": 100, "max_bytes": 1 << 30}
SEAL = BodySeal(new_key())


def _job_id(number: int) -> str:
    return f"{number:032x}"


def test_a_claimed_job_is_held_by_its_worker_until_its_lease_runs_out(store: IncidentStore) -> None:
    jobs = StoreJobs(store, SEAL)
    jobs.submit(_job_id(1), "acme", BODY, **ROOMY)
    # A lease long enough that a loaded machine still asks again before it runs out.
    first = jobs.claim("replica-a:1", lease_s=1.5)
    assert first is not None
    assert (first.id, first.tenant, first.body, first.attempts) == (_job_id(1), "acme", BODY, 1)
    assert jobs.claim("replica-b:2", lease_s=1.5) is None
    assert jobs.get(_job_id(1)).state == JobState.running  # type: ignore[union-attr]
    time.sleep(1.7)  # replica a died: nothing renews its lease
    again = jobs.claim("replica-b:2", lease_s=30)
    assert again is not None and again.id == _job_id(1) and again.attempts == 2
    assert jobs.get(_job_id(1)).claimed_by == "replica-b:2"  # type: ignore[union-attr]


def test_a_renewed_lease_keeps_the_job_with_its_worker(store: IncidentStore) -> None:
    jobs = StoreJobs(store, SEAL)
    jobs.submit(_job_id(2), "acme", BODY, **ROOMY)
    assert jobs.claim("replica-a:1", lease_s=1.5) is not None
    for _ in range(3):
        time.sleep(0.6)  # three renewals span more than one lease
        assert jobs.renew([_job_id(2)], "replica-a:1", lease_s=1.5) == {_job_id(2)}
    assert jobs.claim("replica-b:2", lease_s=30) is None


def test_only_the_worker_holding_a_job_finishes_it(store: IncidentStore) -> None:
    jobs = StoreJobs(store, SEAL)
    jobs.submit(_job_id(3), "acme", BODY, **ROOMY)
    assert jobs.claim("replica-a:1", lease_s=0.2) is not None
    time.sleep(0.4)  # replica a stalled past its lease; b takes the job over
    assert jobs.claim("replica-b:2", lease_s=30) is not None
    assert jobs.renew([_job_id(3)], "replica-a:1", lease_s=30) == set()
    assert not jobs.finish(_job_id(3), "replica-a:1", (500, "internal error: MemoryError"))
    assert jobs.finish(_job_id(3), "replica-b:2")
    ended = jobs.get(_job_id(3))
    assert ended is not None
    assert (ended.state, ended.failure_status, ended.attempts) == (JobState.done, None, 2)
    assert jobs.claim("replica-c:3", lease_s=30) is None


def test_a_job_that_stops_every_replica_running_it_fails_after_its_attempts(
    store: IncidentStore,
) -> None:
    jobs = StoreJobs(store, SEAL, max_attempts=2)
    jobs.submit(_job_id(4), "acme", BODY, **ROOMY)
    for worker in ("replica-a:1", "replica-b:2"):
        assert jobs.claim(worker, lease_s=0.1) is not None
        time.sleep(0.2)
    assert jobs.claim("replica-c:3", lease_s=30) is None
    failed = jobs.get(_job_id(4))
    assert failed is not None and failed.state == JobState.failed
    assert failed.failure_status == 500
    assert "abandoned 2 times" in (failed.failure_detail or "")


def test_a_stopping_replica_gives_its_job_back_without_using_an_attempt(
    store: IncidentStore,
) -> None:
    jobs = StoreJobs(store, SEAL)
    jobs.submit(_job_id(5), "acme", BODY, **ROOMY)
    assert jobs.claim("replica-a:1", lease_s=30) is not None
    jobs.release(_job_id(5), "replica-a:1")
    taken = jobs.claim("replica-b:2", lease_s=30)
    assert taken is not None and taken.attempts == 1


def test_the_queue_limits_count_every_replicas_jobs(store: IncidentStore) -> None:
    replica_a, replica_b = StoreJobs(store, SEAL), StoreJobs(store, SEAL)
    replica_a.submit(_job_id(6), "acme", BODY, max_jobs=2, max_bytes=10 * len(BODY))
    replica_b.submit(_job_id(7), "globex", BODY, max_jobs=2, max_bytes=10 * len(BODY))
    with pytest.raises(QueueFull, match="2 jobs are queued or running"):
        replica_a.submit(_job_id(8), "acme", BODY, max_jobs=2, max_bytes=10 * len(BODY))
    with pytest.raises(QueueFull, match="retry later"):
        replica_b.submit(_job_id(9), "acme", BODY * 9, max_jobs=10, max_bytes=10 * len(BODY))


@pytest.mark.postgres
def test_workers_racing_for_jobs_each_get_a_different_one(postgres_store: IncidentStore) -> None:
    jobs = StoreJobs(postgres_store, SEAL)
    for number in range(4):
        jobs.submit(_job_id(100 + number), "acme", BODY, **ROOMY)
    with ThreadPoolExecutor(max_workers=8) as pool:
        claims = list(pool.map(lambda n: jobs.claim(f"worker-{n}", 30), range(8)))
    taken = [c.id for c in claims if c is not None]
    assert sorted(taken) == [_job_id(100 + number) for number in range(4)]


@pytest.mark.parametrize("ending", ["done", "failed", "abandoned"])
def test_a_jobs_raw_body_is_gone_from_the_store_file_once_the_job_ends(
    sqlite_store: IncidentStore, ending: str
) -> None:
    """A job's body waits in the store as it was sent (see the README: it is read as the
    command line reads it), sealed, and only until the job ends: then it is erased, from the
    rows and from the file's bytes (its freed pages are overwritten), whichever way it ended."""
    import sqlite3
    from contextlib import closing

    from denpex.store.store import sqlite_path
    from tests.hybrid.test_redact import EVERY_OTHER_KIND, SECRET_VALUES, SECRETS_LOG

    lines = [f"[rank1]: ERROR {key} rejected: {value}" for key, value in EVERY_OTHER_KIND.items()]
    # Past a page (4 KiB), as request bodies are: the body spans overflow pages.
    body = ((SECRETS_LOG + "\n".join(lines) + "\n") * 8).encode()
    secrets = [
        *SECRET_VALUES,
        *(v.removeprefix("WANDB_API_KEY=") for v in EVERY_OTHER_KIND.values()),
    ]
    database = sqlite_path(str(sqlite_store.engine.url))
    assert database is not None

    def kept() -> bytes:
        with closing(sqlite3.connect(database)) as connection:
            rows = "\n".join(connection.iterdump()).encode()
        return rows + b"".join(p.read_bytes() for p in database.parent.glob(database.name + "*"))

    jobs = StoreJobs(sqlite_store, SEAL, max_attempts=1)
    jobs.submit(_job_id(1), "acme", body, **ROOMY)
    waiting = kept()
    assert not [s for s in secrets if s.encode() in waiting], "it waits sealed"
    claimed = jobs.claim("replica-a:1", lease_s=0.2 if ending == "abandoned" else 30)
    assert claimed is not None and claimed.body == body
    if ending == "abandoned":
        time.sleep(0.4)  # its replica died; the next claim finds it past its attempts
        assert jobs.claim("replica-b:2", lease_s=30) is None
    else:
        assert jobs.finish(_job_id(1), "replica-a:1", (400, "bad") if ending == "failed" else None)
    assert jobs.get(_job_id(1)).state == ("done" if ending == "done" else "failed")  # type: ignore[union-attr]
    left = kept()
    for secret in secrets:
        assert secret.encode() not in left, secret
