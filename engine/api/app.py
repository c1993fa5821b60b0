"""The FastAPI application: signed diagnoses for bots, hang triage, Slack, a page for people.

Consumes `ApiSettings` (read at the edge by `denpex serve`), the nonce ledger replicas share
(the store's, when one is configured) and the same hybrid path the command line uses; produces
the ASGI app. The compiled signature library is built once, in the lifespan, and shared by
every request (each thread scans with its own Hyperscan scratch). A request is diagnosed
exactly as `denpex diagnose` diagnoses a file: the same evidence, gate, best effort and
incident store, recorded per tenant. Routes live in `denpex.api.routes_*`; what they share
(settings, signed bodies, problem documents) in `denpex.api.service`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from denpex import __version__
from denpex.api import routes_bundles, routes_diagnoses, routes_hang, routes_page, routes_slack
from denpex.api.jobs import Diagnoser
from denpex.api.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from denpex.api.metrics import ApiMetrics
from denpex.api.routes_docs import add_docs
from denpex.api.service import (
    ApiSettings,
    ApiState,
    SignedBody,
    invalid_request,
    problem,
    problem_response,
    state_of,
)
from denpex.api.service import allow as _allow
from denpex.api.service import signed_body as _signed_body
from denpex.auth import MemoryNonces, NonceLedger, Verifier
from denpex.curation.settings import CurationSettings
from denpex.match.scan import Matcher
from denpex.pipeline import Hybrid
from denpex.schemas import diagnosis_schema
from denpex.signatures.library import load_library

__all__ = ["ApiSettings", "SignedBody", "_allow", "_signed_body", "create_app"]

_state = state_of
_State = ApiState


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
    if settings.slack_signing_secret and settings.slack_tenant not in settings.tenants:
        raise ValueError(f"the Slack tenant {settings.slack_tenant!r} is not a configured tenant")

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        library = load_library(
            settings.rules_dir, cache_dir=settings.cache_dir, overlay_dir=settings.overlay_dir
        )
        matcher = Matcher(library, "auto", settings.cache_dir)
        metrics = ApiMetrics()
        diagnoser = Diagnoser(settings, matcher, hybrid, metrics)
        app.state.denpex = ApiState(
            settings=settings,
            matcher=matcher,
            verifier=Verifier(settings.tenants, nonces or MemoryNonces(), settings.max_skew_s),
            diagnoser=diagnoser,
            hybrid=hybrid,
            metrics=metrics,
        )
        try:
            yield
        finally:
            diagnoser.close()

    app = FastAPI(
        title="denpex",
        version=__version__,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        description="Failure diagnosis for distributed ML runs. Requests to /v1 are signed per "
        "tenant (see denpex.auth); errors are RFC 9457 problem documents.",
    )
    app.add_exception_handler(StarletteHTTPException, problem)
    app.add_exception_handler(RequestValidationError, invalid_request)

    # The probes answer on the event loop itself: a `def` route waits for a worker thread,
    # and under load those are all diagnosing (api_load.py: /healthz p50 394 ms as `def`,
    # 167 ms as `async def`, 32 clients). They only read state the lifespan set.
    @app.get("/healthz", tags=["operations"])
    async def healthz(request: Request) -> dict[str, str]:
        return {"status": "ok", "rules_version": state_of(request).matcher.library.label}

    @app.get("/readyz", tags=["operations"])
    async def readyz(request: Request) -> JSONResponse:
        """Ready once the signature library is compiled (the lifespan has finished)."""
        state = getattr(request.app.state, "denpex", None)
        if state is None:
            return problem_response(503, "the signature library is still loading")
        return JSONResponse({"status": "ready", "rules_version": state.matcher.library.label})

    @app.get("/metrics", tags=["operations"])
    def metrics(request: Request) -> Response:
        return Response(state_of(request).metrics.exposition(), media_type=METRICS_CONTENT_TYPE)

    @app.middleware("http")
    async def count_requests(request: Request, call_next: Any) -> Response:
        response: Response = await call_next(request)
        state = getattr(request.app.state, "denpex", None)
        if state is not None:
            route = request.scope.get("route")
            template = getattr(route, "path", "unmatched")
            state.metrics.requests.labels(template, str(response.status_code)).inc()
        return response

    @app.get("/v1/schema", tags=["diagnoses"])
    def schema() -> dict[str, Any]:
        return diagnosis_schema()

    app.include_router(routes_diagnoses.router)
    app.include_router(routes_bundles.router)
    app.include_router(routes_hang.router)
    app.include_router(routes_slack.router)
    app.include_router(routes_page.router)
    add_docs(app)

    # Curation (issue 12): the queue, confirm, reject, propose, backtest and promote; a
    # promotion reloads the library with the overlay's new version.
    if curation is not None:
        from denpex.api.curation import curation_router

        def reload_library() -> None:
            library = load_library(
                settings.rules_dir, cache_dir=settings.cache_dir, overlay_dir=curation.overlay_dir
            )
            state = app.state.denpex
            state.matcher = Matcher(library, "auto", settings.cache_dir)
            state.diagnoser.source = replace(
                state.diagnoser.source, overlay_dir=curation.overlay_dir
            )
            state.diagnoser.matcher = state.matcher

        app.include_router(curation_router(curation, _signed_body, _allow, reload_library))
    return app
