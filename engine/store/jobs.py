"""Diagnosis jobs in the incident store, so that any API replica sharing it can run any job.

Consumes an open `IncidentStore` (SQLite for one replica, PostgreSQL for several) and request
bodies; produces `JobRecord`s. A replica worker claims the oldest waiting job for a lease and
renews the lease while it runs; a job whose lease ran out (its replica was killed, lost its
machine or stalled) is waiting again and the next worker to look claims it. Claiming is one
conditional UPDATE, so of two workers racing for a job the database lets exactly one have it;
finishing is conditional on still holding it, so a worker that lost its lease cannot overwrite
what the new holder does. A job claimed `max_attempts` times without ending (it kills every
replica that runs it) fails instead of going round forever. Times are the database's clock, so
replicas whose clocks differ agree on whose lease ran out.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import ColumnElement, and_, delete, func, or_, select, text, update
from sqlalchemy.orm import Session

from denpex.errors import DenpexError
from denpex.store.schema import JobRow, JobState
from denpex.store.sealing import BodySeal, SealError
from denpex.store.store import IncidentStore

KEEP_FINISHED_S = 7 * 24 * 3600.0
"""How long a finished job's state stays readable (its diagnosis stays in the store)."""


class QueueFull(DenpexError):
    """The jobs waiting or running, across every replica, are at a limit; retry later."""


@dataclass(frozen=True)
class JobRecord:
    id: str
    tenant: str
    state: str
    size: int
    created_at: float
    attempts: int
    claimed_by: str | None = None
    finished_at: float | None = None
    failure_status: int | None = None
    failure_detail: str | None = None


@dataclass(frozen=True)
class ClaimedJob:
    id: str
    tenant: str
    body: bytes
    attempts: int


def _record(row: JobRow) -> JobRecord:
    return JobRecord(
        id=row.id,
        tenant=row.tenant,
        state=row.state,
        size=row.size,
        created_at=row.created_at,
        attempts=row.attempts,
        claimed_by=row.claimed_by,
        finished_at=row.finished_at,
        failure_status=row.failure_status,
        failure_detail=row.failure_detail,
    )


def database_now(session: Session) -> float:
    """Unix seconds on the database server's clock."""
    if session.get_bind().dialect.name == "postgresql":
        query = text("SELECT EXTRACT(EPOCH FROM clock_timestamp())")
    else:
        query = text("SELECT (julianday('now') - 2440587.5) * 86400.0")
    return float(session.scalar(query))


def _claimable(now: float) -> ColumnElement[bool]:
    return or_(
        JobRow.state == JobState.queued,
        and_(JobRow.state == JobState.running, JobRow.lease_until < now),
    )


def _fail(
    session: Session, job_id: str, now: float, detail: str, *conditions: ColumnElement[bool]
) -> None:
    """Ends a job as failed (500, `detail`) and erases its body, where `conditions` still hold."""
    session.execute(
        update(JobRow)
        .where(JobRow.id == job_id, *conditions)
        .values(
            state=JobState.failed,
            body=None,
            lease_until=None,
            finished_at=now,
            failure_status=500,
            failure_detail=detail,
        )
        .execution_options(synchronize_session=False)
    )


class StoreJobs:
    """The jobs of every replica that shares `store`."""

    def __init__(self, store: IncidentStore, seal: BodySeal, *, max_attempts: int = 3) -> None:
        self.store = store
        self.seal = seal
        """Queued bodies are raw logs: they are stored sealed (`denpex.store.sealing`)."""
        self.max_attempts = max_attempts

    def submit(
        self, job_id: str, tenant: str, body: bytes, *, max_jobs: int, max_bytes: int
    ) -> JobRecord:
        """Queues a job; raises QueueFull when `max_jobs` are waiting or running, or their
        bodies and this one would pass `max_bytes`."""

        def insert(session: Session) -> JobRecord:
            now = database_now(session)
            session.execute(
                delete(JobRow).where(
                    JobRow.state.not_in(JobState.unfinished),
                    JobRow.finished_at < now - KEEP_FINISHED_S,
                )
            )
            waiting, held = session.execute(
                select(func.count(), func.coalesce(func.sum(JobRow.size), 0)).where(
                    JobRow.state.in_(JobState.unfinished)
                )
            ).one()
            if waiting >= max_jobs:
                raise QueueFull(f"{waiting} jobs are queued or running; retry later")
            if held + len(body) > max_bytes:
                raise QueueFull(
                    f"queued jobs hold {held} bytes of the {max_bytes} allowed; retry later"
                )
            row = JobRow(
                id=job_id,
                tenant=tenant,
                state=JobState.queued,
                body=self.seal.seal(body, job_id),
                size=len(body),
                created_at=now,
                attempts=0,
            )
            session.add(row)
            session.flush()
            return _record(row)

        return self.store.write(insert)

    def claim(self, worker: str, lease_s: float) -> ClaimedJob | None:
        """The oldest job no live worker holds, now held by `worker` for `lease_s` seconds;
        None when there is none. A job past its attempts is failed on the way."""

        def take(session: Session) -> ClaimedJob | None:
            now = database_now(session)
            candidates = session.execute(
                select(JobRow.id, JobRow.attempts)
                .where(_claimable(now))
                .order_by(JobRow.created_at, JobRow.id)
                .limit(16)
            ).all()
            for job_id, attempts in candidates:
                if attempts >= self.max_attempts:
                    self._abandon(session, job_id, attempts, now)
                    continue
                taken = session.execute(
                    update(JobRow)
                    .where(JobRow.id == job_id, _claimable(now))
                    .values(
                        state=JobState.running,
                        claimed_by=worker,
                        lease_until=now + lease_s,
                        attempts=JobRow.attempts + 1,
                    )
                    .execution_options(synchronize_session=False)
                )
                if taken.rowcount != 1:
                    continue  # another worker took it first
                row = session.get(JobRow, job_id, populate_existing=True)
                assert row is not None and row.body is not None
                try:
                    body = self.seal.open(row.body, job_id)
                except SealError as error:
                    self._refuse(session, job_id, str(error), now)
                    continue
                return ClaimedJob(row.id, row.tenant, body, row.attempts)
            return None

        return self.store.write(take)

    def _abandon(self, session: Session, job_id: str, attempts: int, now: float) -> None:
        _fail(
            session,
            job_id,
            now,
            f"the job was abandoned {attempts} times: every replica that ran it stopped before "
            "it ended (killed, out of memory, or its machine lost)",
            _claimable(now),
        )

    def _refuse(self, session: Session, job_id: str, why: str, now: float) -> None:
        """Fails a job whose body this replica cannot open: no replica with this key can."""
        _fail(session, job_id, now, why)

    def renew(self, job_ids: list[str], worker: str, lease_s: float) -> set[str]:
        """Extends `worker`'s leases on `job_ids`; the ids it still holds."""
        if not job_ids:
            return set()

        def extend(session: Session) -> set[str]:
            now = database_now(session)
            held = set(
                session.scalars(
                    select(JobRow.id).where(
                        JobRow.id.in_(job_ids),
                        JobRow.claimed_by == worker,
                        JobRow.state == JobState.running,
                    )
                )
            )
            if held:
                session.execute(
                    update(JobRow)
                    .where(JobRow.id.in_(held), JobRow.claimed_by == worker)
                    .values(lease_until=now + lease_s)
                    .execution_options(synchronize_session=False)
                )
            return held

        return self.store.write(extend)

    def finish(self, job_id: str, worker: str, failure: tuple[int, str] | None = None) -> bool:
        """Ends `worker`'s job: done, or failed with (HTTP status, detail). False when the
        worker no longer holds it (its lease ran out and another worker claimed it)."""

        def end(session: Session) -> bool:
            now = database_now(session)
            ended = session.execute(
                update(JobRow)
                .where(
                    JobRow.id == job_id,
                    JobRow.claimed_by == worker,
                    JobRow.state == JobState.running,
                )
                .values(
                    state=JobState.failed if failure else JobState.done,
                    body=None,
                    lease_until=None,
                    finished_at=now,
                    failure_status=failure[0] if failure else None,
                    failure_detail=failure[1] if failure else None,
                )
                .execution_options(synchronize_session=False)
            )
            return ended.rowcount == 1

        return self.store.write(end)

    def release(self, job_id: str, worker: str) -> None:
        """Gives a job back to the queue at once (this replica is stopping): the attempt does
        not count against it."""

        def give_back(session: Session) -> None:
            session.execute(
                update(JobRow)
                .where(
                    JobRow.id == job_id,
                    JobRow.claimed_by == worker,
                    JobRow.state == JobState.running,
                )
                .values(state=JobState.queued, lease_until=None, attempts=JobRow.attempts - 1)
                .execution_options(synchronize_session=False)
            )

        self.store.write(give_back)

    def get(self, job_id: str) -> JobRecord | None:
        def read(session: Session) -> JobRecord | None:
            row = session.get(JobRow, job_id)
            return _record(row) if row is not None else None

        return self.store.write(read)
