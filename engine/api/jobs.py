"""Diagnoses for the API: the command line's engine, per tenant, now or as a job.

Consumes a request body (a log, an archive or a compressed file), the tenant that signed it,
the compiled matcher and, when a store is configured, the hybrid path; produces a `Diagnosis`
exactly as `denpex diagnose -` would (the same evidence, gate, best effort and incident
store), recorded with the tenant's name under an id the API hands out before it is stored.

Large bodies become jobs: a bounded pool of worker threads (no broker) diagnoses them while the
client polls a status URL. This process keeps its newest results and jobs in memory; with a
store, any replica sharing it can read every tenant's recorded diagnoses back.
"""

from __future__ import annotations

import io
import threading
import time
import uuid
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from denpex.errors import DenpexError, InputTooLarge, InputTooSlow, NotRecorded
from denpex.evidence import Evidence
from denpex.ingest.sources import InputLimits
from denpex.match.scan import AbnormalLines, Matcher
from denpex.models import Diagnosis
from denpex.pipeline import DiagnoseOptions, Hybrid, HybridCase, diagnose

if TYPE_CHECKING:
    from denpex.api.metrics import ApiMetrics
    from denpex.api.service import ApiSettings


class Busy(Exception):
    """Every job slot is taken; the client should retry later."""


@dataclass(frozen=True)
class Failure:
    """Why a diagnosis could not be made, as an HTTP status and one line."""

    status: int
    detail: str


def failure_of(error: DenpexError) -> Failure:
    if isinstance(error, NotRecorded):
        return Failure(503, f"{error}; nothing was recorded, send it again")
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


class _TenantHybrid:
    """The hybrid path for one API request: records under the API's id and the tenant."""

    def __init__(self, path: Hybrid, incident_id: str, tenant: str) -> None:
        self._path = path
        self._incident_id = incident_id
        self._tenant = tenant

    def abnormal_lines(self, backend: str, cache_dir: Path | None) -> AbnormalLines:
        return self._path.abnormal_lines(backend, cache_dir)

    def case(self, evidence: Evidence) -> HybridCase:
        case = self._path.case(evidence)
        # HybridCase (denpex.hybrid.path) records under these; another Hybrid may ignore them.
        if hasattr(case, "incident_id"):
            case.incident_id = self._incident_id
        if hasattr(case, "tenant"):
            case.tenant = self._tenant
        return case


def new_id() -> str:
    return uuid.uuid4().hex


class Diagnoser:
    """Runs diagnoses for tenants, keeps the newest results and owns the job pool."""

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
        self._pool = ThreadPoolExecutor(settings.job_workers, thread_name_prefix="denpex-job")
        self._lock = threading.Lock()
        self._results: OrderedDict[str, tuple[str, Diagnosis]] = OrderedDict()
        self._jobs: OrderedDict[str, Job] = OrderedDict()

    # diagnosing -----------------------------------------------------------------------------

    def diagnose(self, tenant: str, body: bytes, diagnosis_id: str | None = None) -> Diagnosis:
        """Diagnoses `body` in this thread; raises DenpexError for unusable input."""
        diagnosis_id = diagnosis_id or new_id()
        settings = self.settings
        options = DiagnoseOptions(
            confidence_threshold=settings.confidence_threshold,
            cache_dir=settings.cache_dir,
            limits=InputLimits(
                max_unpacked_bytes=settings.max_unpacked_bytes,
                deadline=time.monotonic() + settings.request_time_limit_s,
            ),
        )
        hybrid = _TenantHybrid(self.hybrid, diagnosis_id, tenant) if self.hybrid else None
        started = time.perf_counter()
        diagnosis = diagnose(
            ["-"], options, matcher=self.matcher, stdin=io.BytesIO(body), hybrid=hybrid
        )
        self.metrics.diagnoses.labels(diagnosis.status.value).inc()
        self.metrics.diagnosis_seconds.observe(time.perf_counter() - started)
        self._keep(diagnosis_id, tenant, diagnosis)
        return diagnosis

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
        self._pool.submit(self._work, job, body)
        return job

    def _forget_old_jobs(self) -> None:
        finished = [j.id for j in self._jobs.values() if j.finished is not None]
        for job_id in finished[: max(0, len(self._jobs) - self.settings.kept_results)]:
            del self._jobs[job_id]

    def _work(self, job: Job, body: bytes) -> None:
        job.state = JobState.running
        try:
            self.diagnose(job.tenant, body, diagnosis_id=job.id)
        except DenpexError as error:
            job.failure = failure_of(error)
            job.state = JobState.failed
        except Exception as error:  # a bug in denpex: the job says so instead of vanishing
            job.failure = Failure(500, f"internal error: {type(error).__name__}")
            job.state = JobState.failed
        else:
            job.state = JobState.done
        job.finished = time.time()
        self.metrics.jobs.labels(job.state.value).inc()

    def job(self, tenant: str, job_id: str) -> Job | None:
        with self._lock:
            job = self._jobs.get(job_id)
        return job if job is not None and job.tenant == tenant else None

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
