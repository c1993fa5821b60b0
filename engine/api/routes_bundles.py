"""Nodes' evidence bundles over HTTP: receive each node's, diagnose the job from all of them.

Consumes signed requests (`denpex.api.service`) whose body is a bundle `denpex bundle` made on a
node (itself signed with the tenant's secret, `denpex.distributed.bundles`); produces the job's
nodes heard from, and the diagnosis of the job from its nodes' bundles: the one the raw logs
give, recorded per tenant like any other. Bundles are kept with their secrets redacted (as
incidents are), in the store when one is configured (any replica can then assemble them), else
in this process.
"""

from __future__ import annotations

import threading
from typing import Annotated, Any, Protocol

from fastapi import APIRouter, HTTPException, Path, Request
from fastapi.responses import JSONResponse

from denpex.api.jobs import failure_of, new_id
from denpex.api.routes_diagnoses import _links
from denpex.api.service import ApiState, SignedBody, allow, state_of
from denpex.distributed.bundles import (
    NAME,
    Bundle,
    BundleError,
    assemble_bundles,
    open_bundle,
    resealed,
)
from denpex.distributed.codec import CodecError, Signatures
from denpex.distributed.fanout import check_results
from denpex.errors import DenpexError
from denpex.hybrid.harvest import abnormal_lines
from denpex.hybrid.redact import without_secrets_in

router = APIRouter(tags=["bundles"])

Job = Annotated[str, Path(pattern=f"^{NAME.pattern}$", description="the job's name")]
MAX_NODES = 100_000


class BundleShelf(Protocol):
    def put(self, tenant: str, job: str, node: str, cluster: str, body: bytes) -> list[str]: ...

    def bodies(self, tenant: str, job: str) -> list[bytes]: ...


class MemoryBundles:
    """Bundles kept by this process (no store): one replica receives and assembles them."""

    def __init__(self) -> None:
        self._jobs: dict[tuple[str, str], dict[str, bytes]] = {}
        self._lock = threading.Lock()

    def put(self, tenant: str, job: str, node: str, cluster: str, body: bytes) -> list[str]:
        with self._lock:
            nodes = self._jobs.setdefault((tenant, job), {})
            nodes[node] = body
            return sorted(nodes)

    def bodies(self, tenant: str, job: str) -> list[bytes]:
        with self._lock:
            nodes = self._jobs.get((tenant, job), {})
            return [nodes[node] for node in sorted(nodes)]


def shelf_of(state: ApiState) -> BundleShelf:
    shelf = state.extra.get("bundles")
    if shelf is None:
        store = getattr(state.hybrid, "store", None)
        if store is not None:
            from denpex.store.bundles import StoreBundles

            shelf = StoreBundles(store)
        else:
            shelf = MemoryBundles()
        state.extra["bundles"] = shelf
    return shelf


def _signatures(state: ApiState) -> Signatures:
    lexicon = abnormal_lines("auto", state.settings.cache_dir).matcher.library
    return Signatures.of(state.matcher.library, lexicon)


def _opened(state: ApiState, body: bytes) -> Bundle:
    try:
        return open_bundle(
            body, state.settings.tenants, max_bytes=state.settings.max_unpacked_bytes
        )
    except BundleError as error:
        raise HTTPException(400, str(error)) from None


@router.post(
    "/v1/bundles",
    status_code=201,
    summary="Receive one node's evidence bundle for a job (`denpex bundle` makes it)",
)
def receive_bundle(request: Request, signed: SignedBody) -> JSONResponse:
    tenant, body = signed
    allow(tenant, "diagnose")
    state = state_of(request)
    bundle = _opened(state, body)
    if bundle.name.tenant != tenant.id:
        raise HTTPException(
            403, f"the bundle is signed for tenant {bundle.name.tenant!r}, not {tenant.id!r}"
        )
    try:
        check_results([bundle.scan], _signatures(state))
    except CodecError as error:
        raise HTTPException(400, str(error)) from None
    name = bundle.name
    # Kept with its secrets redacted, as incidents are (it may wait days for the other nodes'),
    # and signed anew with the tenant's secret so it is read back as any bundle is.
    kept = resealed(bundle, tenant.secret, without_secrets_in)
    try:
        nodes = shelf_of(state).put(tenant.id, name.job, name.node, name.cluster, kept)
    except DenpexError as error:
        raise HTTPException(503, str(error)) from None
    if len(nodes) > MAX_NODES:
        raise HTTPException(413, f"job {name.job} has bundles from more than {MAX_NODES} nodes")
    return JSONResponse(
        {
            "tenant": tenant.id,
            "cluster": name.cluster,
            "job": name.job,
            "node": name.node,
            "nodes": nodes,
            "links": {"diagnosis": f"/v1/bundles/{name.job}/diagnosis"},
        },
        status_code=201,
    )


@router.post(
    "/v1/bundles/{job}/diagnosis",
    summary="Diagnose a job from its nodes' bundles (the diagnosis its raw logs give)",
)
def diagnose_bundles(
    request: Request, signed: SignedBody, job: Job, nodes: int | None = None
) -> JSONResponse:
    """`nodes`: how many nodes' bundles the job needs; fewer is 409, so a client can wait for
    the stragglers instead of diagnosing without them."""
    tenant, _ = signed
    allow(tenant, "diagnose")
    state = state_of(request)
    try:
        bodies = shelf_of(state).bodies(tenant.id, job)
    except DenpexError as error:
        raise HTTPException(503, str(error)) from None
    if not bodies:
        raise HTTPException(404, f"no bundle for job {job!r} of tenant {tenant.id!r}")
    if nodes is not None and len(bodies) < nodes:
        raise HTTPException(409, f"{len(bodies)} of the {nodes} nodes' bundles have arrived")
    bundles = [_opened(state, body) for body in bodies]
    diagnosis_id = new_id()
    try:
        assembled = assemble_bundles(
            bundles, _signatures(state), max_unpacked_bytes=state.settings.max_unpacked_bytes
        )
        diagnosis = state.diagnoser.diagnose_scan(tenant.id, assembled.scan, diagnosis_id)
    except DenpexError as error:
        failure = failure_of(error)
        raise failure.http_error() from None
    document: dict[str, Any] = {
        "tenant": tenant.id,
        "id": diagnosis_id,
        "job": job,
        "nodes": sorted(b.name.node for b in bundles),
        "diagnosis": diagnosis.model_dump(mode="json"),
        "links": _links(diagnosis_id),
    }
    return JSONResponse(document)
