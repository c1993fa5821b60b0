"""Diagnoses for the API: the command line's engine, per tenant, now or as a job.

Consumes a request body (a log, an archive or a compressed file), the tenant that signed it,
the compiled matcher and, when a store is configured, the hybrid path; produces a `Diagnosis`
exactly as `denpex diagnose -` would (the same evidence, gate, best effort and incident
store), recorded with the tenant's name under an id the API hands out before it is stored.

Large bodies become jobs the client polls by a status URL. Without a store, a bounded pool of
worker threads in this process runs them (`LocalJobs`, no broker). With a store, jobs live in it
(`denpex.api.shared_jobs`): any replica sharing the store claims them under a lease, and a job
whose replica died is claimed again by another. This process keeps its newest results in
memory; with a store, any replica sharing it can read every tenant's recorded diagnoses back.

A request's inputs are read (matched, assembled, dumps triaged) in a worker process under the
per-request memory cap (`denpex.api.bounded`) unless the cap is off; the reasoning over the
evidence, the hybrid path and the store run in the calling thread.
"""

from __future__ import annotations

import io
import os
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

from fastapi import HTTPException

from denpex.api.bounded import (
    LibrarySource,
    MemoryLimitExceeded,
    Reading,
    ReadingPool,
    WorkerStopped,
)
from denpex.api.service import Problem
from denpex.errors import DenpexError, InputTooLarge, InputTooSlow
from denpex.evidence import Evidence, EvidenceOptions, ScanResult, assemble, assemble_scan
from denpex.hang.models import Scheduler
from denpex.hybrid.harvest import abnormal_lines
from denpex.ingest.sources import InputLimits
from denpex.match.scan import Matcher
from denpex.models import Diagnosis
from denpex.pipeline import DiagnoseOptions, Hybrid, RecordedAs, diagnose_evidence
from denpex.store.errors import NotRecorded

if TYPE_CHECKING:
    from denpex.api.metrics import ApiMetrics
    from denpex.api.service import ApiSettings


class Busy(DenpexError):
    """Every job slot is taken; the client should retry later."""


@dataclass(frozen=True)
class Failure:
    """Why a diagnosis could not be made, as an HTTP status and one line."""

    status: int
    detail: str
    kind: str | None = None
    """The problem type, when not the status's (`urn:denpex:problem:<kind>`)."""
    title: str | None = None

    def http_error(self) -> HTTPException:
        if self.kind is not None and self.title is not None:
            return Problem(self.status, self.detail, kind=self.kind, title=self.title)
        return HTTPException(self.status, self.detail)


def failure_of(error: DenpexError) -> Failure:
    if isinstance(error, NotRecorded):
        return Failure(503, f"{error}; nothing was recorded, send it again")
    if isinstance(error, MemoryLimitExceeded):
        return Failure(413, str(error), "memory-limit", "Memory limit exceeded")
    if isinstance(error, WorkerStopped):
        return Failure(503, str(error), "worker-stopped", "Worker stopped")
    if isinstance(error, InputTooLarge):
        return Failure(413, str(error))
    if isinstance(error, InputTooSlow):
        return Failure(503, str(error))
    return Failure(400, str(error))


class JobState(StrEnum):
    queued = "queued"
    running = "running"
    done = "done"
    failed = "failed"


@dataclass
class Job:
    id: str
    tenant: str
    size: int = 0
    """The body's bytes, held until the job ends."""
    state: JobState = JobState.queued
    created: float = field(default_factory=time.time)
    finished: float | None = None
    failure: Failure | None = None
    attempts: int = 0
    """How many times a worker started it (more than once: a replica running it died)."""


JobWork = Callable[[str, str, bytes], "Failure | None"]
"""Diagnoses one job's body (job id, tenant, body); why it failed, or None."""


class JobRunner(Protocol):
    """Where jobs wait and which workers run them."""

    def submit(self, tenant: str, body: bytes) -> Job: ...

    def job(self, tenant: str, job_id: str) -> Job | None: ...

    def close(self) -> None: ...


def new_id() -> str:
    return uuid.uuid4().hex


class Diagnoser:
    """Runs diagnoses for tenants, keeps the newest results and owns the job runner."""

    def __init__(
        self,
        settings: ApiSettings,
        matcher: Matcher,
        hybrid: Hybrid | None,
        metrics: ApiMetrics,
    ) -> None:
        self.settings = settings
        self.matcher = matcher
        self.hybrid = hybrid
        self.metrics = metrics
        self._lock = threading.Lock()
        self._results: OrderedDict[str, tuple[str, Diagnosis]] = OrderedDict()
        self.source = LibrarySource(settings.rules_dir, settings.cache_dir, settings.overlay_dir)
        """Where the library `matcher` holds was loaded from (workers load it from there)."""
        self.reading: ReadingPool | None = None
        if settings.request_memory_limit:
            self.reading = ReadingPool(
                self.source,
                settings.request_memory_limit,
                settings.reading_processes or os.cpu_count() or 1,
            )
        store = getattr(hybrid, "store", None)
        self.jobs: JobRunner
        if store is not None:
            from denpex.api.shared_jobs import SharedJobs

            self.jobs = SharedJobs(settings, store, self.run_job, metrics)
        else:
            self.jobs = LocalJobs(settings, self.run_job, metrics)

    # diagnosing -----------------------------------------------------------------------------

    def _options(self) -> DiagnoseOptions:
        settings = self.settings
        return DiagnoseOptions(
            confidence_threshold=settings.confidence_threshold,
            cache_dir=settings.cache_dir,
            limits=settings.request_limits(),
        )

    def evidence(
        self,
        body: bytes,
        limits: InputLimits,
        *,
        abnormal: bool,
        digests: bool,
        world_size: int | None = None,
        scheduler: Scheduler | None = None,
    ) -> Evidence:
        """The evidence of `body`: read by a worker process under the memory cap, or (no cap)
        in this thread. Raises DenpexError for unusable input."""
        if self.reading is not None:
            reading = Reading(
                source=self.source,
                rules_version=self.matcher.library.label,
                limits=limits,
                abnormal=abnormal,
                digests=digests,
                world_size=world_size,
                scheduler=scheduler,
            )
            return self.reading.read(body, reading)
        lines = None
        if abnormal:
            lines = (
                self.hybrid.abnormal_lines("auto", self.settings.cache_dir)
                if self.hybrid
                else abnormal_lines("auto", self.settings.cache_dir)
            )
        options = EvidenceOptions(
            world_size=world_size,
            scheduler=scheduler,
            abnormal=lines,
            digests=digests,
            limits=limits,
        )
        return assemble(["-"], self.matcher, options, stdin=io.BytesIO(body))

    def diagnose(self, tenant: str, body: bytes, diagnosis_id: str | None = None) -> Diagnosis:
        """Diagnoses `body` as `denpex diagnose -` does (its inputs read under the memory cap);
        raises DenpexError for unusable input."""
        diagnosis_id = diagnosis_id or new_id()
        hybrid = RecordedAs(self.hybrid, diagnosis_id, tenant) if self.hybrid else None
        started = time.perf_counter()
        options = self._options()
        evidence = self.evidence(
            body, options.limits, abnormal=True, digests=self.hybrid is not None
        )
        diagnosis = diagnose_evidence(evidence, options, started, hybrid)
        return self._finish(tenant, diagnosis_id, diagnosis, started)

    def diagnose_scan(
        self, tenant: str, scan: ScanResult, diagnosis_id: str | None = None
    ) -> Diagnosis:
        """Diagnoses inputs scanned elsewhere (nodes' bundles), as if scanned here."""
        diagnosis_id = diagnosis_id or new_id()
        hybrid = RecordedAs(self.hybrid, diagnosis_id, tenant) if self.hybrid else None
        started = time.perf_counter()
        options = self._options()
        evidence = assemble_scan(
            scan, self.matcher.library.label, EvidenceOptions(limits=options.limits)
        )
        diagnosis = diagnose_evidence(evidence, options, started, hybrid)
        return self._finish(tenant, diagnosis_id, diagnosis, started)

    def _finish(
        self, tenant: str, diagnosis_id: str, diagnosis: Diagnosis, started: float
    ) -> Diagnosis:
        self.metrics.diagnoses.labels(diagnosis.status.value).inc()
        self.metrics.diagnosis_seconds.observe(time.perf_counter() - started)
        self._keep(diagnosis_id, tenant, diagnosis)
        return diagnosis

    def run_job(self, job_id: str, tenant: str, body: bytes) -> Failure | None:
        """A job's diagnosis, recorded under the job's id; why it failed, or None."""
        try:
            self.diagnose(tenant, body, diagnosis_id=job_id)
        except DenpexError as error:
            return failure_of(error)
        except Exception as error:  # a bug in denpex: the job says so instead of vanishing
            return Failure(500, f"internal error: {type(error).__name__}")
        return None

    def _keep(self, diagnosis_id: str, tenant: str, diagnosis: Diagnosis) -> None:
        with self._lock:
            self._results[diagnosis_id] = (tenant, diagnosis)
            while len(self._results) > self.settings.kept_results:
                self._results.popitem(last=False)

    def diagnosis(self, tenant: str, diagnosis_id: str) -> Diagnosis | None:
        """The tenant's diagnosis with this id: kept here, or recorded in the shared store.
        Another tenant's diagnosis is as absent as one that never existed."""
        with self._lock:
            kept = self._results.get(diagnosis_id)
        if kept is not None:
            return kept[1] if kept[0] == tenant else None
        store = getattr(self.hybrid, "store", None)
        if store is None:
            return None
        try:
            incident = store.get(diagnosis_id)
        except DenpexError:
            return None
        return incident.diagnosis if incident.tenant == tenant else None

    # jobs -----------------------------------------------------------------------------------

    def submit(self, tenant: str, body: bytes) -> Job:
        """Queues a diagnosis; raises Busy when `max_queued_jobs` are waiting or running, or
        their bodies and this one would pass `max_queued_bytes`."""
        return self.jobs.submit(tenant, body)

    def job(self, tenant: str, job_id: str) -> Job | None:
        return self.jobs.job(tenant, job_id)

    def close(self) -> None:
        self.jobs.close()
        if self.reading is not None:
            self.reading.close()


class LocalJobs:
    """Jobs in this process's memory, run by a bounded pool of its threads (no store)."""

    def __init__(self, settings: ApiSettings, work: JobWork, metrics: ApiMetrics) -> None:
        self.settings = settings
        self.work = work
        self.metrics = metrics
        self._pool = ThreadPoolExecutor(settings.job_workers, thread_name_prefix="denpex-job")
        self._lock = threading.Lock()
        self._jobs: OrderedDict[str, Job] = OrderedDict()

    def submit(self, tenant: str, body: bytes) -> Job:
        job = Job(id=new_id(), tenant=tenant, size=len(body))
        with self._lock:
            waiting = [other for other in self._jobs.values() if other.finished is None]
            held = sum(other.size for other in waiting)
            if len(waiting) >= self.settings.max_queued_jobs:
                raise Busy(f"{len(waiting)} jobs are queued or running; retry later")
            if held + job.size > self.settings.max_queued_bytes:
                raise Busy(
                    f"queued jobs hold {held} bytes of the {self.settings.max_queued_bytes} "
                    "allowed; retry later"
                )
            self._jobs[job.id] = job
            self._forget_old_jobs()
        self.metrics.jobs.labels(JobState.queued.value).inc()
        self._pool.submit(self._run, job, body)
        return job

    def _forget_old_jobs(self) -> None:
        finished = [j.id for j in self._jobs.values() if j.finished is not None]
        for job_id in finished[: max(0, len(self._jobs) - self.settings.kept_results)]:
            del self._jobs[job_id]

    def _run(self, job: Job, body: bytes) -> None:
        job.state = JobState.running
        job.attempts += 1
        job.failure = self.work(job.id, job.tenant, body)
        job.state = JobState.failed if job.failure else JobState.done
        job.finished = time.time()
        self.metrics.jobs.labels(job.state.value).inc()

    def job(self, tenant: str, job_id: str) -> Job | None:
        with self._lock:
            job = self._jobs.get(job_id)
        return job if job is not None and job.tenant == tenant else None

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
