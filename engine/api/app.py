"""The FastAPI application: `POST /v1/diagnoses` for bots, with tenant-bound signatures.

Consumes `ApiSettings` (read at the edge by `denpex serve`) and, when a store is configured, the
same hybrid path the command line uses; produces the ASGI app. Routes are plain `def`:
diagnosing is CPU-bound work that belongs in the thread pool. The compiled signature library is
built once, in the lifespan, and shared by every request. A request is diagnosed exactly as
`denpex diagnose` diagnoses a file: the same evidence, and with a store the same best effort
and curation queue. A request body is a log,
an archive (.tar, .tar.gz, .zip) or a gzip file, limited to `max_body_bytes`.
"""

from __future__ import annotations

import io
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from denpex import __version__
from denpex.api.auth import AuthError, MemoryNonces, NonceLedger, NotAllowed, Tenant, Verifier
from denpex.api.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from denpex.api.metrics import ApiMetrics
from denpex.curation.settings import CurationSettings
from denpex.errors import DenpexError, InputTooLarge, InputTooSlow
from denpex.ingest.sources import InputLimits
from denpex.match.library import load_library
from denpex.match.scan import Matcher
from denpex.models import Diagnosis
from denpex.pipeline import DiagnoseOptions, Hybrid, diagnose
from denpex.render import render_markdown, render_slack
from denpex.schemas import diagnosis_schema


@dataclass(frozen=True)
class ApiSettings:
    tenants: Mapping[str, Tenant]
    rules_dir: Path | None = None
    cache_dir: Path | None = None
    confidence_threshold: float = 0.6
    max_body_bytes: int = 256 * 1024 * 1024
    max_unpacked_bytes: int = 2 * 1024**3
    """What one request's archives and compressed files may unpack to."""
    request_time_limit_s: float = 120.0
    """How long reading one request's inputs may take."""
    max_skew_s: float = 300.0
    overlay_dir: Path | None = None
    """The deployment's overlay of curated signatures, loaded on top of the packaged library."""


@dataclass
class _State:
    settings: ApiSettings
    matcher: Matcher
    verifier: Verifier
    hybrid: Hybrid | None = None
    metrics: ApiMetrics = field(default_factory=ApiMetrics)
    extra: dict[str, Any] = field(default_factory=dict)


def _state(request: Request) -> _State:
    return request.app.state.denpex


async def _signed_body(request: Request) -> tuple[Tenant, bytes]:
    """The tenant that signed the request, and its body. The headers are verified first, so a
    stranger's body is never read; the body is then read up to the limit and checked against
    its signed digest."""
    state = _state(request)
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
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and len(declared) < 20 and int(declared) > limit:
        raise HTTPException(413, f"the body is larger than {limit} bytes")
    body = bytearray()
    async for part in request.stream():
        body.extend(part)
        if len(body) > limit:
            raise HTTPException(413, f"the body is larger than {limit} bytes")
    try:
        signed.check_body(bytes(body))
    except AuthError as error:
        raise HTTPException(401, str(error)) from None
    return signed.tenant, bytes(body)


def _allow(tenant: Tenant, feature: str) -> None:
    try:
        tenant.require(feature)
    except NotAllowed as refusal:
        raise HTTPException(403, str(refusal)) from None


PROBLEM_TYPES = {
    400: "bad-input",
    401: "not-authenticated",
    403: "not-in-plan",
    404: "not-found",
    405: "method-not-allowed",
    413: "too-large",
    422: "invalid-request",
    503: "not-ready",
}


def _problem_response(status: int, detail: str) -> JSONResponse:
    """An RFC 9457 problem document."""
    kind = PROBLEM_TYPES.get(status, "error")
    return JSONResponse(
        {
            "type": f"urn:denpex:problem:{kind}",
            "title": HTTPStatus(status).phrase,
            "status": status,
            "detail": detail,
        },
        status_code=status,
        media_type="application/problem+json",
    )


async def _problem(_request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, StarletteHTTPException)
    return _problem_response(error.status_code, str(error.detail))


async def _invalid_request(_request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, RequestValidationError)
    first = error.errors()[0] if error.errors() else {}
    where = ".".join(str(part) for part in first.get("loc", ()))
    return _problem_response(422, f"{where}: {first.get('msg', 'invalid request')}")


SignedBody = Annotated[tuple[Tenant, bytes], Depends(_signed_body)]


def create_app(
    settings: ApiSettings,
    nonces: NonceLedger | None = None,
    *,
    hybrid: Hybrid | None = None,
    curation: CurationSettings | None = None,
) -> FastAPI:
    """The app; `nonces` is shared by replicas (the store's ledger), else kept in memory.
    `hybrid`: the hybrid path (incident store, retrieval, LLM) when a store is configured.
    `curation`: the curation resources (`/v1/curation/...`) when a store and an overlay are."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        library = load_library(
            settings.rules_dir, cache_dir=settings.cache_dir, overlay_dir=settings.overlay_dir
        )
        app.state.denpex = _State(
            settings=settings,
            matcher=Matcher(library, "auto", settings.cache_dir),
            verifier=Verifier(settings.tenants, nonces or MemoryNonces(), settings.max_skew_s),
            hybrid=hybrid,
        )
        yield

    app = FastAPI(title="denpex", version=__version__, lifespan=lifespan)
    app.add_exception_handler(StarletteHTTPException, _problem)
    app.add_exception_handler(RequestValidationError, _invalid_request)

    @app.get("/healthz")
    def healthz(request: Request) -> dict[str, str]:
        return {"status": "ok", "rules_version": _state(request).matcher.library.label}

    @app.get("/readyz")
    def readyz(request: Request) -> JSONResponse:
        """Ready once the signature library is compiled (the lifespan has finished)."""
        state = getattr(request.app.state, "denpex", None)
        if state is None:
            return _problem_response(503, "the signature library is still loading")
        return JSONResponse({"status": "ready", "rules_version": state.matcher.library.label})

    @app.get("/metrics")
    def metrics(request: Request) -> Response:
        return Response(_state(request).metrics.exposition(), media_type=METRICS_CONTENT_TYPE)

    @app.middleware("http")
    async def count_requests(request: Request, call_next: Any) -> Response:
        response: Response = await call_next(request)
        state = getattr(request.app.state, "denpex", None)
        if state is not None:
            route = request.scope.get("route")
            template = getattr(route, "path", "unmatched")
            state.metrics.requests.labels(template, str(response.status_code)).inc()
        return response

    @app.get("/v1/schema")
    def schema() -> dict[str, Any]:
        return diagnosis_schema()

    @app.post("/v1/diagnoses")
    def create_diagnosis(
        request: Request, signed: SignedBody, render: str | None = None
    ) -> JSONResponse:
        tenant, body = signed
        _allow(tenant, "diagnose")
        state = _state(request)
        options = DiagnoseOptions(
            confidence_threshold=state.settings.confidence_threshold,
            cache_dir=state.settings.cache_dir,
            limits=InputLimits(
                max_unpacked_bytes=state.settings.max_unpacked_bytes,
                deadline=time.monotonic() + state.settings.request_time_limit_s,
            ),
        )
        started = time.perf_counter()
        try:
            diagnosis: Diagnosis = diagnose(
                ["-"], options, matcher=state.matcher, stdin=io.BytesIO(body), hybrid=state.hybrid
            )
        except InputTooLarge as error:
            raise HTTPException(413, str(error)) from None
        except InputTooSlow as error:
            raise HTTPException(503, str(error)) from None
        except DenpexError as error:
            raise HTTPException(400, str(error)) from None
        state.metrics.diagnoses.labels(diagnosis.status.value).inc()
        state.metrics.diagnosis_seconds.observe(time.perf_counter() - started)
        document: dict[str, Any] = {
            "tenant": tenant.id,
            "diagnosis": diagnosis.model_dump(mode="json"),
        }
        if render == "slack":
            document["rendered"] = render_slack(diagnosis)
        elif render == "markdown":
            document["rendered"] = render_markdown(diagnosis)
        elif render is not None:
            raise HTTPException(400, "render must be slack or markdown")
        return JSONResponse(document)

    # Curation (issue 12): the queue, confirm, reject, propose, backtest and promote; a
    # promotion reloads the library with the overlay's new version.
    if curation is not None:
        from denpex.api.curation import curation_router

        def reload_library() -> None:
            library = load_library(
                settings.rules_dir, cache_dir=settings.cache_dir, overlay_dir=curation.overlay_dir
            )
            app.state.denpex.matcher = Matcher(library, "auto", settings.cache_dir)

        app.include_router(curation_router(curation, _signed_body, _allow, reload_library))

    return app
