"""Hang triage over HTTP: every rank's Flight Recorder dump, with the job's identity.

Consumes a signed archive (.tar, .tar.gz or .zip) holding one dump per rank (`fr_dump_<rank>`,
pickle or JSON, as `TORCH_NCCL_DEBUG_INFO_TEMP_FILE` names them) and, optionally, the ranks'
logs; the job's identity (its scheduler job id), world size and scheduler come in the signed
query. Produces the `HangReport` of `denpex hang`: the same evidence and the same culprit, read
by `denpex.evidence.assemble`. Only tenants whose plan includes `hang` may ask.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from denpex.api.jobs import failure_of
from denpex.api.service import SignedBody, allow, state_of
from denpex.errors import DenpexError
from denpex.hang.models import Scheduler
from denpex.hang.render import to_text
from denpex.hang_view import hang_view

router = APIRouter(tags=["hang triage"])

JobId = Annotated[
    str,
    Query(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$",
        description="the job's identity, e.g. its Slurm job id or Kubernetes job name",
    ),
]


@router.post("/v1/hangs", summary="Find the ranks behind a hang from every rank's dump")
def triage_hang(
    request: Request,
    signed: SignedBody,
    job: JobId,
    world_size: Annotated[int | None, Query(ge=1, le=1_048_576)] = None,
    scheduler: Scheduler | None = None,
) -> JSONResponse:
    tenant, body = signed
    allow(tenant, "hang")
    state = state_of(request)
    try:
        evidence = state.diagnoser.evidence(
            body,
            state.settings.request_limits(),
            abnormal=False,
            digests=False,
            world_size=world_size,
            scheduler=scheduler,
        )
        report = hang_view(evidence)
    except DenpexError as error:
        failure = failure_of(error)
        raise failure.http_error() from None
    document: dict[str, Any] = {
        "tenant": tenant.id,
        "job": {"id": job, "world_size": world_size, "scheduler": scheduler},
        "report": report.model_dump(mode="json"),
        "rendered": to_text(report),
    }
    return JSONResponse(document)
