"""The FastAPI application: `POST /v1/diagnoses` for bots, with tenant-bound signatures.

Consumes `ApiSettings` (read at the edge by `denpex serve`); produces the ASGI app. Routes are
plain `def`: diagnosing is CPU-bound work that belongs in the thread pool. The compiled signature
library is built once, in the lifespan, and shared by every request. A request body is a log,
an archive (.tar, .tar.gz, .zip) or a gzip file, limited to `max_body_bytes`.
"""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse

from denpex import __version__
from denpex.api.auth import AuthError, ReplayGuard, Verifier
from denpex.errors import DenpexError
from denpex.match.library import load_library
from denpex.match.scan import Matcher
from denpex.models import Diagnosis
from denpex.pipeline import DiagnoseOptions, diagnose
from denpex.render import render_markdown, render_slack
from denpex.schemas import diagnosis_schema


@dataclass(frozen=True)
class ApiSettings:
    tenants: dict[str, str]
    rules_dir: Path | None = None
    cache_dir: Path | None = None
    confidence_threshold: float = 0.6
    max_body_bytes: int = 256 * 1024 * 1024
    max_skew_s: float = 300.0


@dataclass
class _State:
    settings: ApiSettings
    matcher: Matcher
    verifier: Verifier
    replay: ReplayGuard
    extra: dict[str, Any] = field(default_factory=dict)


def _state(request: Request) -> _State:
    return request.app.state.denpex


async def _signed_body(request: Request) -> tuple[str, bytes]:
    state = _state(request)
    declared = request.headers.get("content-length")
    if (
        declared is not None
        and declared.isdigit()
        and int(declared) > state.settings.max_body_bytes
    ):
        raise HTTPException(413, f"body larger than {state.settings.max_body_bytes} bytes")
    body = bytearray()
    async for part in request.stream():
        body.extend(part)
        if len(body) > state.settings.max_body_bytes:
            raise HTTPException(413, f"body larger than {state.settings.max_body_bytes} bytes")
    try:
        tenant = state.verifier.tenant_of(
            {k.lower(): v for k, v in request.headers.items()},
            request.method,
            request.url.path,
            bytes(body),
            state.replay,
        )
    except AuthError as error:
        raise HTTPException(401, str(error)) from None
    return tenant, bytes(body)


SignedBody = Annotated[tuple[str, bytes], Depends(_signed_body)]


def create_app(settings: ApiSettings) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        library = load_library(settings.rules_dir, cache_dir=settings.cache_dir)
        app.state.denpex = _State(
            settings=settings,
            matcher=Matcher(library, "auto", settings.cache_dir),
            verifier=Verifier(settings.tenants, settings.max_skew_s),
            replay=ReplayGuard(settings.max_skew_s),
        )
        yield

    app = FastAPI(title="denpex", version=__version__, lifespan=lifespan)

    @app.get("/healthz")
    def healthz(request: Request) -> dict[str, str]:
        return {"status": "ok", "rules_version": _state(request).matcher.library.label}

    @app.get("/v1/schema")
    def schema() -> dict[str, Any]:
        return diagnosis_schema()

    @app.post("/v1/diagnoses")
    def create_diagnosis(
        request: Request, signed: SignedBody, render: str | None = None
    ) -> JSONResponse:
        tenant, body = signed
        state = _state(request)
        options = DiagnoseOptions(
            confidence_threshold=state.settings.confidence_threshold,
            cache_dir=state.settings.cache_dir,
        )
        try:
            diagnosis: Diagnosis = diagnose(
                ["-"], options, matcher=state.matcher, stdin=io.BytesIO(body)
            )
        except DenpexError as error:
            raise HTTPException(400, str(error)) from None
        document: dict[str, Any] = {
            "tenant": tenant,
            "diagnosis": diagnosis.model_dump(mode="json"),
        }
        if render == "slack":
            document["rendered"] = render_slack(diagnosis)
        elif render == "markdown":
            document["rendered"] = render_markdown(diagnosis)
        elif render is not None:
            raise HTTPException(400, "render must be slack or markdown")
        return JSONResponse(document)

    return app
