"""Diagnoses over HTTP: create one (now, or as a job for a large body), poll a job, read one back.

Consumes signed requests (`denpex.api.service`); produces JSON documents with links, and a
recorded diagnosis rendered as JSON, Markdown, HTML or Slack Block Kit. Diagnosing is CPU-bound:
every route that diagnoses is a plain `def`, run in the thread pool, never on the event loop.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, Request
from fastapi.responses import JSONResponse, Response

from denpex.api.jobs import Busy, Job, JobState, failure_of, new_id
from denpex.api.service import SignedBody, allow, state_of
from denpex.errors import DenpexError
from denpex.models import Diagnosis
from denpex.render import RENDERERS

router = APIRouter(tags=["diagnoses"])

Identifier = Annotated[str, Path(pattern="^[0-9a-f]{32}$", description="32 hex digits")]

MEDIA_TYPES = {
    "json": "application/json",
    "markdown": "text/markdown; charset=utf-8",
    "html": "text/html; charset=utf-8",
    "slack": "application/json",
}
INLINE_RENDERINGS = ("slack", "markdown", "html")


def _links(diagnosis_id: str) -> dict[str, str]:
    base = f"/v1/diagnoses/{diagnosis_id}"
    return {"self": base, **{name: f"{base}?format={name}" for name in MEDIA_TYPES}}


def _job_document(job: Job) -> dict[str, Any]:
    document: dict[str, Any] = {
        "id": job.id,
        "tenant": job.tenant,
        "state": job.state.value,
        "attempts": job.attempts,
        "links": {"self": f"/v1/jobs/{job.id}"},
    }
    if job.state is JobState.done:
        document["links"]["diagnosis"] = f"/v1/diagnoses/{job.id}"
    if job.failure is not None:
        document["problem"] = {"status": job.failure.status, "detail": job.failure.detail}
    return document


def _wants_job(request: Request, body: bytes, threshold: int) -> bool:
    prefer = request.headers.get("prefer", "").lower()
    return len(body) > threshold or "respond-async" in prefer


@router.post(
    "/v1/diagnoses",
    summary="Diagnose a log, an archive of logs or a compressed log",
    responses={202: {"description": "a job: poll the status URL in Location"}},
)
def create_diagnosis(request: Request, signed: SignedBody, render: str | None = None) -> Response:
    """The body is one log, a .tar/.tar.gz/.zip archive or a gzip file. A body over the job
    threshold (or sent with `Prefer: respond-async`) becomes a job: 202 with its status URL.
    `render` adds a rendering (`slack`, `markdown` or `html`) to a diagnosis made now."""
    tenant, body = signed
    allow(tenant, "diagnose")
    if render is not None and render not in INLINE_RENDERINGS:
        raise HTTPException(400, f"render must be one of {', '.join(INLINE_RENDERINGS)}")
    state = state_of(request)
    diagnoser = state.diagnoser
    if _wants_job(request, body, state.settings.job_threshold_bytes):
        try:
            job = diagnoser.submit(tenant.id, body)
        except Busy as busy:
            raise HTTPException(503, str(busy), headers={"Retry-After": "30"}) from None
        return JSONResponse(
            _job_document(job), status_code=202, headers={"Location": f"/v1/jobs/{job.id}"}
        )
    diagnosis_id = new_id()
    try:
        diagnosis: Diagnosis = diagnoser.diagnose(tenant.id, body, diagnosis_id)
    except DenpexError as error:
        failure = failure_of(error)
        raise failure.http_error() from None
    document: dict[str, Any] = {
        "tenant": tenant.id,
        "id": diagnosis_id,
        "diagnosis": diagnosis.model_dump(mode="json"),
        "links": _links(diagnosis_id),
    }
    if render is not None:
        document["rendered"] = RENDERERS[render](diagnosis)
    return JSONResponse(document)


@router.get("/v1/jobs/{job_id}", summary="A diagnosis job's state")
def job_status(request: Request, signed: SignedBody, job_id: Identifier) -> JSONResponse:
    tenant, _ = signed
    job = state_of(request).diagnoser.job(tenant.id, job_id)
    if job is None:
        # Without a store, jobs live in the replica that took them; with one, in the store.
        raise HTTPException(404, f"no job {job_id} for tenant {tenant.id!r} on this server")
    return JSONResponse(_job_document(job))


@router.get(
    "/v1/diagnoses/{diagnosis_id}",
    summary="A recorded diagnosis as JSON, Markdown, HTML or Slack Block Kit",
)
def read_diagnosis(
    request: Request, signed: SignedBody, diagnosis_id: Identifier, format: str = "json"
) -> Response:
    tenant, _ = signed
    if format not in MEDIA_TYPES:
        raise HTTPException(400, f"format must be one of {', '.join(MEDIA_TYPES)}")
    diagnosis = state_of(request).diagnoser.diagnosis(tenant.id, diagnosis_id)
    if diagnosis is None:
        raise HTTPException(404, f"no diagnosis {diagnosis_id} for tenant {tenant.id!r}")
    return Response(RENDERERS[format](diagnosis), media_type=MEDIA_TYPES[format])
