"""What every route of the API shares: its settings, its per-process state, signed bodies and
problem documents.

Consumes the request (headers, query, body stream) and the settings `denpex serve` read at the
edge; produces the authenticated tenant and body, or an RFC 9457 problem document. Routes live
in `denpex.api.routes_*` and the app is put together in `denpex.api.app`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from http import HTTPStatus
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import Depends, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from denpex.api.metrics import ApiMetrics
from denpex.auth import AuthError, NotAllowed, Tenant, Verifier
from denpex.errors import DenpexError
from denpex.ingest.sources import InputLimits
from denpex.match.scan import Matcher
from denpex.pipeline import Hybrid

if TYPE_CHECKING:
    from denpex.api.jobs import Diagnoser


API_MAX_UNPACKED_BYTES = 2 * 1024**3
"""What one request's archives and compressed files may unpack to, unless a setting says."""
API_REQUEST_MEMORY_LIMIT = 4 * 1024**3
"""The address space reading one request's inputs may add, unless a setting says."""


@dataclass(frozen=True)
class ApiSettings:
    tenants: Mapping[str, Tenant]
    rules_dir: Path | None = None
    cache_dir: Path | None = None
    confidence_threshold: float = 0.6
    max_body_bytes: int = 256 * 1024 * 1024
    limits: InputLimits = field(
        default_factory=lambda: InputLimits(max_unpacked_bytes=API_MAX_UNPACKED_BYTES)
    )
    """Bounds on reading one request's inputs (`DENPEX_MAX_*`): what its archives and
    compressed files may unpack to, archive members and nesting, Flight Recorder dumps."""
    request_time_limit_s: float = 120.0
    """How long reading one request's inputs may take."""
    request_memory_limit: int = API_REQUEST_MEMORY_LIMIT
    """Bytes of address space reading one request's inputs may add to a worker process
    (`denpex.api.bounded`); past it the request is refused with 413. 0: no cap, inputs are read
    in the server's own threads."""
    reading_processes: int | None = None
    """Worker processes reading requests' inputs under that cap (None: one per CPU)."""
    max_skew_s: float = 300.0
    overlay_dir: Path | None = None
    """The deployment's overlay of curated signatures, loaded on top of the packaged library."""
    job_threshold_bytes: int = 8 * 1024 * 1024
    """Bodies larger than this become jobs (202 and a status URL) instead of waiting."""
    job_workers: int = 2
    """Threads diagnosing jobs; a job waits for a free one."""
    max_queued_jobs: int = 64
    """Jobs waiting or running at once; past it a new one is refused with 503."""
    max_queued_bytes: int = 1024**3
    """The bodies of jobs waiting or running, together; past it a new job is refused with 503."""
    job_lease_s: float = 30.0
    """With a store: how long a replica's claim on a job lasts unless renewed (every third of
    it); a job whose replica died is run again by another about this long after."""
    job_poll_s: float = 1.0
    """With a store: how often an idle worker looks for a job another replica queued."""
    job_max_attempts: int = 3
    """With a store: claims of one job before it is failed (it stops every replica running it)."""
    job_body_key: str | None = field(default=None, repr=False)
    """With a store: the key queued bodies are sealed with (`denpex.store.sealing.seal_for`)."""
    kept_results: int = 1000
    """Finished diagnoses and jobs this process keeps in memory, newest first (the store keeps
    every diagnosis when one is configured)."""
    slack_signing_secret: str | None = field(default=None, repr=False)
    """Slack's signing secret; None turns the slash-command endpoint off."""
    slack_tenant: str | None = None
    """The tenant whose plan and store records the slash command's diagnoses belong to."""

    @property
    def max_unpacked_bytes(self) -> int:
        return self.limits.max_unpacked_bytes

    def request_limits(self) -> InputLimits:
        """The reading bounds of one request that starts now (its deadline included)."""
        return replace(self.limits, deadline=time.monotonic() + self.request_time_limit_s)


@dataclass
class ApiState:
    settings: ApiSettings
    matcher: Matcher
    verifier: Verifier
    diagnoser: Diagnoser
    hybrid: Hybrid | None = None
    metrics: ApiMetrics = field(default_factory=ApiMetrics)
    extra: dict[str, Any] = field(default_factory=dict)


def state_of(request: Request) -> ApiState:
    return request.app.state.denpex


async def signed_body(request: Request) -> tuple[Tenant, bytes]:
    """The tenant that signed the request, and its body. The headers are verified first, so a
    stranger's body is never read; the body is then read up to the limit and checked against
    its signed digest."""
    state = state_of(request)
    limit = state.settings.max_body_bytes
    try:
        signed = state.verifier.authenticate(
            {k.lower(): v for k, v in request.headers.items()},
            request.method,
            request.url.path,
            request.url.query,
        )
    except AuthError as error:
        raise HTTPException(401, str(error)) from None
    except DenpexError as error:  # the shared nonce ledger (the store) cannot answer
        raise HTTPException(503, str(error)) from None
    body = await bounded_body(
        request, limit, f"the body is larger than {limit} bytes (the max_body_bytes limit)"
    )
    try:
        signed.check_body(body)
    except AuthError as error:
        raise HTTPException(401, str(error)) from None
    return signed.tenant, bytes(body)


async def bounded_body(request: Request, limit: int, too_large: str) -> bytes:
    """The request body, refused with 413 (`too_large`) as soon as it is declared or read past
    `limit` bytes: nothing larger is ever held in memory."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and len(declared) < 20 and int(declared) > limit:
        raise HTTPException(413, too_large)
    body = bytearray()
    async for part in request.stream():
        body.extend(part)
        if len(body) > limit:
            raise HTTPException(413, too_large)
    return bytes(body)


def allow(tenant: Tenant, feature: str) -> None:
    try:
        tenant.require(feature)
    except NotAllowed as refusal:
        raise HTTPException(403, str(refusal)) from None


SignedBody = Annotated[tuple[Tenant, bytes], Depends(signed_body)]


PROBLEM_TYPES = {
    400: "bad-input",
    401: "not-authenticated",
    403: "not-in-plan",
    404: "not-found",
    405: "method-not-allowed",
    409: "not-yet",
    413: "too-large",
    422: "invalid-request",
    503: "not-ready",
}


def problem_response(
    status: int,
    detail: str,
    headers: Mapping[str, str] | None = None,
    *,
    kind: str | None = None,
    title: str | None = None,
) -> JSONResponse:
    """An RFC 9457 problem document; its type and title are the status's unless given."""
    kind = kind or PROBLEM_TYPES.get(status, "error")
    return JSONResponse(
        {
            "type": f"urn:denpex:problem:{kind}",
            "title": title or HTTPStatus(status).phrase,
            "status": status,
            "detail": detail,
        },
        status_code=status,
        media_type="application/problem+json",
        headers=dict(headers or {}),
    )


class Problem(HTTPException, DenpexError):
    """An HTTP error whose problem document has its own type and title (not the status's):
    raised on purpose, so it belongs to the error tree as well as to FastAPI's."""

    def __init__(self, status: int, detail: str, *, kind: str, title: str) -> None:
        super().__init__(status, detail)
        self.kind = kind
        self.title = title


async def problem(_request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, StarletteHTTPException)
    return problem_response(
        error.status_code,
        str(error.detail),
        error.headers,
        kind=getattr(error, "kind", None),
        title=getattr(error, "title", None),
    )


async def invalid_request(_request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, RequestValidationError)
    first = error.errors()[0] if error.errors() else {}
    where = ".".join(str(part) for part in first.get("loc", ()))
    return problem_response(422, f"{where}: {first.get('msg', 'invalid request')}")
