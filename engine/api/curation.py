"""The curation resources of the HTTP API: the same loop as `denpex curate`, for bots and UIs.

Consumes `CurationSettings` (built at the edge by `denpex serve`), the app's signed-body
dependency and a callback that reloads the app's library after a promotion; produces a FastAPI
router under `/v1/curation`. Every route is signed like `POST /v1/diagnoses` and needs the
tenant's `curate` feature. A draft travels as its YAML text (`text/yaml` body), as the curator
edits it. A refused promotion is a 409 problem document whose `reasons` say why.
"""

import json
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException
from fastapi.responses import JSONResponse

from denpex.auth import Tenant
from denpex.curation.backtest import backtest
from denpex.curation.errors import PromotionRefused
from denpex.curation.overlay import Overlay
from denpex.curation.promote import current_library, parse_draft, promote
from denpex.curation.propose import propose
from denpex.curation.queue import build_queue
from denpex.curation.settings import CurationSettings
from denpex.errors import DenpexError
from denpex.store.store import IncidentStore, StoreError, open_store


def _decoded(body: bytes) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        raise HTTPException(400, "the body is not UTF-8 text") from None


def _fields(body: bytes) -> dict[str, Any]:
    if not body.strip():
        return {}
    try:
        value = json.loads(body)
    except ValueError:
        raise HTTPException(400, "the body is not JSON") from None
    if not isinstance(value, dict):
        raise HTTPException(400, "the body is a JSON object")
    return value


def curation_router(
    settings: CurationSettings,
    signed_body: Callable[..., Any],
    allow: Callable[[Tenant, str], None],
    reload_library: Callable[[], None],
) -> APIRouter:
    router = APIRouter(prefix="/v1/curation")
    opened: list[IncidentStore] = []
    Signed = Annotated[tuple[Tenant, bytes], Depends(signed_body)]

    def store() -> IncidentStore:
        if not opened:
            opened.append(open_store(settings.store_url))
        return opened[0]

    def curator(signed: tuple[Tenant, bytes]) -> bytes:
        tenant, body = signed
        allow(tenant, "curate")
        return body

    def answer(work: Callable[[], Any]) -> Any:
        try:
            return work()
        except PromotionRefused:
            raise
        except StoreError as error:
            status = 404 if "no incident" in str(error) else 400
            raise HTTPException(status, str(error)) from None
        except DenpexError as error:
            raise HTTPException(400, str(error)) from None

    @router.get("/queue")
    def queue(signed: Signed) -> dict[str, Any]:
        curator(signed)
        groups = answer(lambda: build_queue(store()))
        return {"groups": [group.as_dict() for group in groups]}

    @router.get("/incidents/{incident_id}")
    def show(incident_id: str, signed: Signed) -> JSONResponse:
        curator(signed)
        incident = answer(lambda: store().get(incident_id))
        return JSONResponse(incident.model_dump(mode="json"))

    @router.post("/incidents/{incident_id}/confirm")
    def confirm(incident_id: str, signed: Signed) -> dict[str, Any]:
        fields = _fields(curator(signed))
        wanted = fields.get("class")
        if not isinstance(wanted, str):
            raise HTTPException(400, 'give the confirmed class as {"class": "..."}')
        incident = answer(
            lambda: store().confirm(
                incident_id, wanted, by=fields.get("by"), note=fields.get("note")
            )
        )
        return {"id": incident.id, "curation_state": incident.curation_state, "class": wanted}

    @router.post("/incidents/{incident_id}/reject")
    def reject(incident_id: str, signed: Signed) -> dict[str, Any]:
        fields = _fields(curator(signed))
        incident = answer(
            lambda: store().reject(incident_id, by=fields.get("by"), note=fields.get("note"))
        )
        return {"id": incident.id, "curation_state": incident.curation_state}

    @router.post("/incidents/{incident_id}/propose")
    def draft(incident_id: str, signed: Signed) -> dict[str, Any]:
        curator(signed)
        ids = {s.id for s in Overlay(settings.overlay_dir).signatures()}
        made = answer(
            lambda: propose(
                incident_id,
                store(),
                current_library(settings),
                settings,
                overlay_ids=ids,
                write=False,
            )
        )
        return {"signature_id": made.signature.id, "draft": made.text}

    @router.post("/backtest")
    def check(signed: Signed) -> dict[str, Any]:
        text = _decoded(curator(signed))
        report = answer(
            lambda: backtest(parse_draft(text), current_library(settings), store(), settings)
        )
        return report.as_dict()

    @router.post("/promote")
    def promote_draft(signed: Signed, by: str | None = None) -> JSONResponse:
        text = _decoded(curator(signed))
        try:
            promotion = answer(lambda: promote(parse_draft(text), text, store(), settings, by=by))
        except PromotionRefused as refusal:
            return JSONResponse(
                {
                    "type": "urn:denpex:problem:refused",
                    "title": "Conflict",
                    "status": 409,
                    "detail": str(refusal),
                    "reasons": refusal.reasons,
                },
                status_code=409,
                media_type="application/problem+json",
            )
        reload_library()
        return JSONResponse(promotion.as_dict())

    return router
