"""Jobs in the incident store, run by whichever replica sharing it has a free worker.

Consumes the API's settings, the open store and the work one job is (the `Diagnoser`'s
`run_job`); produces the `JobRunner` `denpex serve` uses when a store is configured. Each
replica runs `job_workers` threads that claim jobs from the store (`denpex.store.jobs`) and one
that renews the leases of the jobs this replica holds. A replica that dies stops renewing;
once its leases run out, another replica's worker claims those jobs and runs them again. The
diagnosis is recorded under the job's id, and a record of that id already in the store is
kept (`IncidentStore.add`), so a job run twice is recorded once; a worker that lost its lease
cannot mark the job as its own.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from typing import TYPE_CHECKING

from denpex.api.jobs import Busy, Failure, Job, JobState, JobWork, new_id
from denpex.errors import DenpexError
from denpex.store.jobs import JobRecord, QueueFull, StoreJobs
from denpex.store.sealing import seal_for
from denpex.store.store import IncidentStore

if TYPE_CHECKING:
    from denpex.api.metrics import ApiMetrics
    from denpex.api.service import ApiSettings

log = logging.getLogger("denpex.api.jobs")


def job_of(record: JobRecord) -> Job:
    failure = (
        Failure(record.failure_status, record.failure_detail or "")
        if record.failure_status is not None
        else None
    )
    return Job(
        id=record.id,
        tenant=record.tenant,
        size=record.size,
        state=JobState(record.state),
        created=record.created_at,
        finished=record.finished_at,
        failure=failure,
        attempts=record.attempts,
    )


class SharedJobs:
    """The jobs of every replica sharing one store; this replica's workers among them."""

    def __init__(
        self,
        settings: ApiSettings,
        store: IncidentStore,
        work: JobWork,
        metrics: ApiMetrics,
    ) -> None:
        self.settings = settings
        self.queue = StoreJobs(
            store, seal_for(settings.job_body_key, store), max_attempts=settings.job_max_attempts
        )
        self.work = work
        self.metrics = metrics
        self.worker = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        """Who holds a job: this replica (host and pid say which, the rest tells restarts apart)."""
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._held: set[str] = set()
        self._lock = threading.Lock()
        self._threads = [
            threading.Thread(target=self._work_loop, name=f"denpex-job-{n}", daemon=True)
            for n in range(settings.job_workers)
        ]
        self._threads.append(
            threading.Thread(target=self._renew_loop, name="denpex-job-lease", daemon=True)
        )
        for thread in self._threads:
            thread.start()

    def submit(self, tenant: str, body: bytes) -> Job:
        try:
            record = self.queue.submit(
                new_id(),
                tenant,
                body,
                max_jobs=self.settings.max_queued_jobs,
                max_bytes=self.settings.max_queued_bytes,
            )
        except QueueFull as full:
            raise Busy(str(full)) from None
        self.metrics.jobs.labels(JobState.queued.value).inc()
        self._wake.set()
        return job_of(record)

    def job(self, tenant: str, job_id: str) -> Job | None:
        try:
            record = self.queue.get(job_id)
        except DenpexError:
            return None
        return job_of(record) if record is not None and record.tenant == tenant else None

    def _work_loop(self) -> None:
        while not self._stop.is_set():
            try:
                claimed = self.queue.claim(self.worker, self.settings.job_lease_s)
            except DenpexError as error:
                log.warning("cannot claim a job: %s", error)
                self._stop.wait(self.settings.job_poll_s)
                continue
            if claimed is None:
                self._wake.wait(self.settings.job_poll_s)
                self._wake.clear()
                continue
            if claimed.attempts > 1:
                log.info("job %s: run again (attempt %d)", claimed.id, claimed.attempts)
            with self._lock:
                self._held.add(claimed.id)
            try:
                failure = self.work(claimed.id, claimed.tenant, claimed.body)
                self._finish(claimed.id, failure)
            finally:
                with self._lock:
                    self._held.discard(claimed.id)

    def _finish(self, job_id: str, failure: Failure | None) -> None:
        state = JobState.failed if failure else JobState.done
        try:
            ended = self.queue.finish(
                job_id, self.worker, (failure.status, failure.detail) if failure else None
            )
        except DenpexError as error:
            # Left running under a lease nobody renews: another worker runs it again, and
            # finds its diagnosis already recorded.
            log.warning("job %s: cannot record that it ended: %s", job_id, error)
            return
        if not ended:
            log.warning("job %s: its lease ran out and another worker holds it", job_id)
            return
        self.metrics.jobs.labels(state.value).inc()

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.settings.job_lease_s / 3):
            with self._lock:
                held = sorted(self._held)
            try:
                kept = self.queue.renew(held, self.worker, self.settings.job_lease_s)
            except DenpexError as error:
                log.warning("cannot renew the leases of %d job(s): %s", len(held), error)
                continue
            for lost in set(held) - kept:
                log.warning("job %s: its lease ran out and another worker holds it", lost)

    def close(self) -> None:
        """Stops claiming, and gives the jobs still running here back to the queue, so another
        replica starts them now rather than when their leases run out."""
        self._stop.set()
        self._wake.set()
        with self._lock:
            held = sorted(self._held)
        for job_id in held:
            try:
                self.queue.release(job_id, self.worker)
            except DenpexError as error:
                log.warning("job %s: cannot give it back: %s", job_id, error)
