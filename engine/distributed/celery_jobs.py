"""Large diagnoses, back-tests and backfills as Celery jobs: the parts fan out over workers, one
worker reduces.

Consumes a broker URL (Redis, or RabbitMQ with a Redis result backend), input paths every
worker can read (a shared file system, as a cluster's job logs are), `DiagnoseOptions`; produces
a job id, the job's progress (runs of files scanned of those planned, bytes) and, once done,
the same `Diagnosis` `denpex diagnose` gives for those paths (timings aside).

A job is a Celery chord: one `denpex.scan` task per run of files (`fanout.scan_units`), whose
plain-JSON results `denpex.reduce` reads back from the result backend one at a time (they do not
travel in its message), assembles into the evidence and reasons over, recording the
diagnosis under the job's id when the job names a store. Messages are JSON only (no pickle
crosses the broker). Tasks are acknowledged late and given back when their worker dies, so a
job survives a worker restart: with Redis, another worker takes an unacknowledged task up once
the visibility timeout has passed. A scan may then run twice; the reduce keys every result by
its place in the plan and scans itself any run whose result did not reach it, so the diagnosis
is the same either way, and recording it again keeps the first record.

A back-test or a backfill (`submit_parts`) is a chord of the same shape: one `denpex.part`
task per run of parts (stored incidents, labelled cases, healthy logs, past jobs), running
`denpex.distributed.batch.run_parts`, and a `denpex.gather` running `reduce_parts` in the parts'
order (the functions the local process pool runs), which does itself any part whose result
did not reach it. Its progress counts tasks and parts done.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from celery import Celery, Task, chord
from celery.exceptions import CeleryError

from denpex.distributed.fanout import (
    Plan,
    PlanItem,
    ScanSettings,
    assemble_units,
    check_results,
    local_rescan,
    parts_of,
    plan_inputs,
    ref_json,
    ref_of,
    scan_units,
)
from denpex.errors import DenpexError, InputError
from denpex.evidence import EvidenceOptions, assemble_scan
from denpex.ingest.sources import FileRef, InputLimits, StreamRef
from denpex.models import Diagnosis
from denpex.pipeline import DiagnoseOptions, RecordedAs, diagnose_evidence
from denpex.store.errors import NotRecorded

DEFAULT_QUEUE = "denpex"
DEFAULT_VISIBILITY_TIMEOUT_S = 1800.0
"""With Redis: how long a task taken by a worker that died waits before another takes it. A
task still running past it is handed out twice (harmless here, but wasted work), so it must
outlast the longest scan of one run of files."""
PROGRESS_EVERY_S = 1.0


@dataclass(frozen=True)
class JobProgress:
    """Where a job stands, as any process with the broker's URL sees it."""

    id: str
    state: str
    """queued, scanning, reducing, done or failed."""
    parts: int
    parts_done: int
    bytes_total: int
    bytes_scanned: int
    diagnosis: Diagnosis | None = None
    error: str | None = None
    not_recorded: str | None = None
    """Why the diagnosis is not in the store the job named, when it is not."""
    kind: str = "diagnose"
    """diagnose, or one of `denpex.distributed.batch.KINDS` (backtest, backfill)."""
    items_total: int = 0
    items_done: int = 0
    """A back-test's or backfill's incidents, cases, logs or job folders (its bytes are 0)."""
    report: dict[str, Any] | None = None
    """A back-test's or backfill's report, once done (`batch.report_of` reads it)."""


def celery_app(
    broker: str,
    *,
    backend: str | None = None,
    queue: str = DEFAULT_QUEUE,
    visibility_timeout_s: float = DEFAULT_VISIBILITY_TIMEOUT_S,
    key_prefix: str = "",
) -> Celery:
    """The Celery app of denpex's jobs on `broker` (results in `backend`, else the broker when
    it is Redis). `key_prefix` keeps one deployment's Redis keys apart from another's."""
    if backend is None:
        if not broker.startswith(("redis://", "rediss://")):
            raise InputError(f"a broker other than Redis ({broker}) needs a result backend URL")
        backend = broker
    app = Celery("denpex", broker=broker, backend=backend, set_as_current=False)
    transport = {
        "visibility_timeout": visibility_timeout_s,
        # Look for tasks whose worker died about ten times per timeout, not every 100 s.
        "unacked_restore_interval": max(1, int(visibility_timeout_s / 10)),
        "unacked_restore_throttle": 1,
    }
    if key_prefix:
        transport["global_keyprefix"] = key_prefix
    app.conf.update(
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        result_accept_content=["json"],
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_track_started=True,
        task_default_queue=queue,
        broker_transport_options=transport,
        result_backend_transport_options={"global_keyprefix": key_prefix} if key_prefix else {},
        result_expires=7 * 24 * 3600,
        # A scan part's result is JSON of about three quarters of its logs' size; gzip stores
        # it in about a tenth of that (node bundles, the same JSON gzipped, are 5% of the logs).
        result_compression="gzip",
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
    )
    app.task(bind=True, name="denpex.scan")(_scan_task)
    app.task(bind=True, name="denpex.reduce")(_reduce_task)
    app.task(bind=True, name="denpex.part")(_part_task)
    app.task(bind=True, name="denpex.gather")(_gather_task)
    return app


# --- submitting and following -------------------------------------------------------------------


class BrokerUnavailable(DenpexError):
    """The broker or the result backend cannot be reached."""


def _broker_errors() -> tuple[type[BaseException], ...]:
    from kombu.exceptions import KombuError

    errors: tuple[type[BaseException], ...] = (OSError, KombuError, CeleryError)
    try:
        from redis import RedisError
    except ImportError:
        return errors
    return (*errors, RedisError)


@contextmanager
def _reaching(app: Celery) -> Iterator[None]:
    try:
        yield
    except _broker_errors() as error:
        where = app.conf.broker_url.split("@")[-1]
        raise BrokerUnavailable(
            f"cannot reach the broker or result backend ({where}): {error}"
        ) from None


def submit(
    app: Celery,
    paths: list[str],
    options: DiagnoseOptions,
    *,
    parts: int,
    store_url: str | None = None,
    job_id: str | None = None,
) -> str:
    """Queues the diagnosis of `paths` as `parts` scan tasks and a reduce; returns the job's
    id. Raises InputError for inputs only this process can read (standard input, pipes), and
    BrokerUnavailable."""
    job_id = job_id or uuid.uuid4().hex
    plan = _absolute(plan_inputs(paths))
    if any(isinstance(item.ref, StreamRef) for item in plan.items):
        raise InputError("standard input and pipes cannot be read by workers; give files")
    settings = _settings(options, digests=store_url is not None)
    runs = parts_of(plan, parts)
    spec = {
        "id": job_id,
        "plan": _plan_json(plan),
        "settings": settings.as_json(),
        "threshold": options.confidence_threshold,
        "store_url": store_url,
        "submitted_at": time.time(),
    }
    with _reaching(app):
        app.connection_for_write().ensure_connection(max_retries=1)
        _send(app, job_id, plan, runs, settings, spec)
    return job_id


def _send(
    app: Celery,
    job_id: str,
    plan: Plan,
    runs: list[list[int]],
    settings: ScanSettings,
    spec: dict[str, Any],
) -> None:
    app.backend.store_result(
        f"{job_id}.meta",
        {
            "parts": len(runs),
            "part_bytes": [sum(plan.items[n].size for n in run) for run in runs],
        },
        "SUCCESS",
    )
    scan = app.signature("denpex.scan")
    header = [
        scan.clone(args=(run, [ref_json(plan.items[n].ref) for n in run], settings.as_json())).set(
            task_id=f"{job_id}.scan.{number}"
        )
        for number, run in enumerate(runs)
    ]
    # Immutable: the chord starts the reduce without handing it the parts' results in its
    # message. Each part's result (about three quarters of its logs' size) stays under its own
    # task id and the reduce reads them one at a time; 64 parts of a 1 GiB job in one message
    # were past Redis's 512 MB bulk limit (benchmarks/README.md, scale_out at 256 KiB).
    reduce = app.signature(
        "denpex.reduce", args=({**spec, "parts": len(runs)},), immutable=True
    ).set(task_id=f"{job_id}.reduce")
    if header:
        chord(header, app=app)(reduce)
    else:  # nothing to scan: the reduce says why there is nothing to diagnose
        reduce.apply_async(task_id=f"{job_id}.reduce")
    _unsubscribe(app, [f"{job_id}.scan.{n}" for n in range(len(runs))] + [f"{job_id}.reduce"])


def _unsubscribe(app: Celery, task_ids: list[str]) -> None:
    """Drops the subscriptions Celery's Redis backend opened for the tasks just sent: this
    process follows a job by reading its stored state, and a subscription dropped later by the
    garbage collector would need a connection that may be closed by then."""
    consumer = getattr(app.backend, "result_consumer", None)
    if consumer is not None:
        for task_id in task_ids:
            consumer.cancel_for(task_id)


def submit_parts(
    app: Celery,
    kind: str,
    parts: list[dict[str, Any]],
    context: dict[str, Any],
    *,
    runs: int,
    job_id: str | None = None,
) -> str:
    """Queues a back-test or a backfill (`denpex.distributed.batch`) as at most `runs`
    `denpex.part` tasks, each a run of parts, and a `denpex.gather` that reduces them in the
    parts' order; returns the job's id. Raises BrokerUnavailable."""
    from denpex.distributed.batch import KINDS, runs_of

    if kind not in KINDS:
        raise InputError(f"no job of kind {kind!r} (known: {', '.join(KINDS)})")
    job_id = job_id or uuid.uuid4().hex
    chosen = runs_of(len(parts), runs) if parts else []
    spec = {"id": job_id, "kind": kind, "parts": parts, "context": context, "runs": len(chosen)}
    with _reaching(app):
        app.connection_for_write().ensure_connection(max_retries=1)
        app.backend.store_result(
            f"{job_id}.meta",
            {"kind": kind, "parts": len(chosen), "part_items": [len(r) for r in chosen]},
            "SUCCESS",
        )
        part = app.signature("denpex.part")
        header = [
            part.clone(args=(kind, run, [parts[n] for n in run], context)).set(
                task_id=f"{job_id}.part.{number}"
            )
            for number, run in enumerate(chosen)
        ]
        gather = app.signature("denpex.gather", args=(spec,)).set(task_id=f"{job_id}.reduce")
        if header:
            chord(header, app=app)(gather)
        else:
            gather.clone(args=([], spec)).apply_async(task_id=f"{job_id}.reduce")
        _unsubscribe(app, [f"{job_id}.part.{n}" for n in range(len(chosen))] + [f"{job_id}.reduce"])
    return job_id


def progress_of(app: Celery, job_id: str, finished: set[int] | None = None) -> JobProgress:
    """The job's state; raises InputError for a job this broker does not know, and
    BrokerUnavailable. `finished`: the scan parts an earlier call of the same caller saw
    finished, added to by this one; they are not read again (a finished part's stored state
    is its whole result, and a caller polling every half second decoded every finished part's
    evidence each time: on a 4,096-rank job, more CPU than the job's own workers)."""
    with _reaching(app):
        return _progress_of(app, job_id, set() if finished is None else finished)


def _progress_of(app: Celery, job_id: str, finished: set[int]) -> JobProgress:
    meta = _meta(app, f"{job_id}.meta")
    if meta["status"] != "SUCCESS" or not isinstance(meta["result"], dict):
        raise InputError(f"no job {job_id} on this broker")
    kind = meta["result"].get("kind", "diagnose")
    task = "scan" if kind == "diagnose" else "part"
    planned = meta["result"]["part_bytes"] if kind == "diagnose" else meta["result"]["part_items"]
    done = scanned = 0
    started = False
    reduce = _meta(app, f"{job_id}.reduce")
    if reduce["status"] in ("STARTED", "SUCCESS"):
        # The chord starts the reduce once every part has ended, and the reduce forgets the
        # parts' results once it has read them: their stored state no longer tells.
        finished.update(range(len(planned)))
    for number, size in enumerate(planned):
        if number in finished:
            done += 1
            scanned += size
            continue
        part = _meta(app, f"{job_id}.{task}.{number}")
        if part["status"] == "SUCCESS":
            finished.add(number)
            done += 1
            scanned += size
        elif part["status"] == "PROGRESS" and isinstance(part["result"], dict):
            scanned += int(part["result"].get("bytes" if kind == "diagnose" else "items", 0))
            started = True
        elif part["status"] == "STARTED":
            started = True
    amount = {"total": sum(planned), "done": min(scanned, sum(planned))}
    common: dict[str, Any] = {"id": job_id, "parts": len(planned), "parts_done": done}
    if kind == "diagnose":
        common |= {"bytes_total": amount["total"], "bytes_scanned": amount["done"]}
    else:
        common |= {
            "kind": kind,
            "bytes_total": 0,
            "bytes_scanned": 0,
            "items_total": amount["total"],
            "items_done": amount["done"],
        }
    if reduce["status"] == "SUCCESS":
        if kind != "diagnose":
            return JobProgress(state="done", report=reduce["result"]["report"], **common)
        return JobProgress(
            state="done",
            diagnosis=Diagnosis.model_validate(reduce["result"]["diagnosis"]),
            not_recorded=reduce["result"]["not_recorded"],
            **common,
        )
    if reduce["status"] == "FAILURE":
        return JobProgress(state="failed", error=_failure(reduce["result"]), **common)
    if reduce["status"] == "STARTED":
        return JobProgress(state="reducing", **common)
    return JobProgress(state="scanning" if started or done else "queued", **common)


def task_state(app: Celery, task_id: str) -> tuple[str, Any]:
    """(state, result or progress) of one of a job's tasks, as the result backend has it."""
    meta = _meta(app, task_id)
    return meta["status"], meta["result"]


def _meta(app: Celery, task_id: str) -> dict[str, Any]:
    # Read the stored state directly: an AsyncResult would subscribe to the task's channel.
    return app.backend.get_task_meta(task_id)


def close(app: Celery) -> None:
    """Closes the app's connections to the broker and the result backend."""
    consumer = getattr(app.backend, "result_consumer", None)
    if consumer is not None:
        consumer.stop()
    app.close()
    client = getattr(app.backend, "client", None)
    if client is not None:
        client.connection_pool.disconnect()


def wait(
    app: Celery,
    job_id: str,
    *,
    timeout_s: float,
    poll_s: float = 0.5,
    on_progress: Callable[[JobProgress], None] | None = None,
) -> JobProgress:
    """Polls until the job ends; its last progress (raises InputError past the timeout)."""
    deadline = time.monotonic() + timeout_s
    finished: set[int] = set()
    while True:
        progress = progress_of(app, job_id, finished)
        if on_progress is not None:
            on_progress(progress)
        if progress.state in ("done", "failed"):
            return progress
        if time.monotonic() > deadline:
            raise InputError(
                f"job {job_id} did not end within {timeout_s:.0f} s ({progress.state})"
            )
        time.sleep(poll_s)


def _failure(result: Any) -> str:
    return (
        f"{type(result).__name__}: {result}" if isinstance(result, BaseException) else str(result)
    )


# --- tasks ------------------------------------------------------------------------------------


def _scan_task(task: Task, indexes: list[int], refs: list[dict], settings: dict) -> dict:
    last = 0.0
    seen = {"inputs": 0, "bytes": 0}

    def report(_name: str, size: int) -> None:
        nonlocal last
        seen["inputs"] += 1
        seen["bytes"] += size
        if time.monotonic() - last >= PROGRESS_EVERY_S and task.request.id:
            task.update_state(state="PROGRESS", meta=dict(seen))
            last = time.monotonic()

    result = scan_units(refs, settings, progress=report)
    return {**result, "indexes": indexes, "scanned_by": f"{socket.gethostname()}:{os.getpid()}"}


def _part_results(task: Task, job_id: str, parts: int) -> list[dict]:
    """The scan parts' results that reached the backend, read one at a time (a part that did
    not is scanned again by the reduce)."""
    results = []
    for number in range(parts):
        part = task.app.AsyncResult(f"{job_id}.scan.{number}")
        if part.successful():
            results.append({**part.result, "part": number})
    return results


def _reduce_task(task: Task, spec: dict) -> dict:
    started = time.perf_counter() - max(0.0, time.time() - spec["submitted_at"])
    results = _part_results(task, spec["id"], spec["parts"])
    plan = _plan_of(spec["plan"])
    settings = ScanSettings.from_json(spec["settings"])
    units: dict[int, Any] = {}
    unpacked = 0
    for result in results:
        if any(n in units for n in result["indexes"]):
            continue  # a run scanned twice (its first worker died after reporting)
        units.update(zip(result["indexes"], result["units"], strict=True))
        unpacked += result["unpacked_bytes"]
    signatures = settings.signatures()
    check_results(results, signatures)
    missing = [n for n, item in enumerate(plan.items) if n not in units]
    if missing:  # a result that did not reach the chord: scan those files here
        again = scan_units([ref_json(plan.items[n].ref) for n in missing], settings.as_json())
        units.update(zip(missing, again["units"], strict=True))
        unpacked += again["unpacked_bytes"]
    assembled = assemble_units(
        plan,
        units,
        signatures,
        max_unpacked_bytes=settings.max_unpacked_bytes,
        unpacked_bytes=unpacked,
        rescan=local_rescan(settings),
    )
    options = DiagnoseOptions(
        rules_dir=Path(settings.rules_dir) if settings.rules_dir else None,
        backend=settings.backend,
        confidence_threshold=spec["threshold"],
        cache_dir=Path(settings.cache_dir) if settings.cache_dir else None,
        limits=InputLimits(max_unpacked_bytes=settings.max_unpacked_bytes),
        experimental=settings.experimental,
        overlay_dir=Path(settings.overlay_dir) if settings.overlay_dir else None,
    )
    evidence = assemble_scan(
        assembled.scan, settings.matcher().library.label, EvidenceOptions(limits=options.limits)
    )
    hybrid = _recorder(spec["store_url"], spec["id"]) if spec["store_url"] else None
    try:
        diagnosis = diagnose_evidence(evidence, options, started, hybrid)
    except NotRecorded as refused:
        _forget_parts(task, spec["id"], "scan", spec["parts"])
        return {
            "diagnosis": refused.diagnosis.model_dump(mode="json"),
            "not_recorded": str(refused),
            "scanned_by": _scanned_by(results),
        }
    _forget_parts(task, spec["id"], "scan", spec["parts"])
    return {
        "diagnosis": diagnosis.model_dump(mode="json"),
        "not_recorded": None,
        "scanned_by": _scanned_by(results),
    }


def _scanned_by(results: list[dict]) -> dict[str, str]:
    """Which worker (host:pid) scanned each part, kept once the parts' results are forgotten."""
    return {str(result["part"]): result["scanned_by"] for result in results}


def _forget_parts(task: Task, job_id: str, kind: str, parts: int) -> None:
    """Deletes the parts' stored results once the reduce has read them: the reduce is their
    only reader, and they hold the job's evidence (hundreds of MB on a 1 GiB job) for the
    backend's whole expiry. A reduce run again after this scans its inputs again."""
    for number in range(parts):
        task.app.backend.forget(f"{job_id}.{kind}.{number}")


def _part_task(task: Task, kind: str, indexes: list[int], parts: list[dict], context: dict) -> dict:
    from denpex.distributed.batch import run_parts

    last = 0.0

    def report(done: int) -> None:
        nonlocal last
        if time.monotonic() - last >= PROGRESS_EVERY_S and task.request.id:
            task.update_state(state="PROGRESS", meta={"items": done})
            last = time.monotonic()

    results = run_parts(kind, parts, context, progress=report)
    return {
        "indexes": indexes,
        "results": results,
        "done_by": f"{socket.gethostname()}:{os.getpid()}",
    }


def _gather_task(task: Task, results: list[dict], spec: dict) -> dict:
    from denpex.distributed.batch import reduce_parts, run_parts

    kind, parts, context = spec["kind"], spec["parts"], spec["context"]
    by_index: dict[int, Any] = {}
    for result in results:
        if any(n in by_index for n in result["indexes"]):
            continue  # a run done twice (its first worker died after reporting)
        by_index.update(zip(result["indexes"], result["results"], strict=True))
    missing = [n for n in range(len(parts)) if n not in by_index]
    if missing:  # a result that did not reach the chord: do those parts here
        again = run_parts(kind, [parts[n] for n in missing], context)
        by_index.update(zip(missing, again, strict=True))
    report = reduce_parts(kind, [by_index[n] for n in range(len(parts))], context)
    _forget_parts(task, spec["id"], "part", spec.get("runs", len(results)))
    # The chord hands the results in the parts' order; who did each is kept once they are gone.
    return {"report": report, "done_by": {str(n): r["done_by"] for n, r in enumerate(results)}}


def _recorder(store_url: str, job_id: str) -> Any:
    """The hybrid path recording under the job's id (a reduce run twice records once)."""
    from denpex.hybrid.path import HybridPath
    from denpex.hybrid.settings import HybridSettings

    return RecordedAs(HybridPath(HybridSettings(store_url=store_url)), job_id, None)


# --- plain data -------------------------------------------------------------------------------


def _settings(options: DiagnoseOptions, *, digests: bool) -> ScanSettings:
    from denpex.distributed.local import scan_settings

    return scan_settings(options, digests=digests)


def _absolute(plan: Plan) -> Plan:
    """The plan with every file's path absolute (workers start elsewhere); names unchanged."""
    items = []
    for item in plan.items:
        ref = item.ref
        if isinstance(ref, FileRef):
            ref = FileRef(str(Path(ref.path).resolve()), ref.shown, ref.relative)
        items.append(PlanItem(ref, item.warnings_before, item.size))
    return Plan(tuple(items), plan.trailing)


def _plan_json(plan: Plan) -> dict[str, Any]:
    return {
        "items": [
            {"ref": ref_json(i.ref), "warnings": list(i.warnings_before), "size": i.size}
            for i in plan.items
        ],
        "trailing": list(plan.trailing),
    }


def _plan_of(value: Mapping[str, Any]) -> Plan:
    return Plan(
        tuple(PlanItem(ref_of(i["ref"]), tuple(i["warnings"]), i["size"]) for i in value["items"]),
        tuple(value["trailing"]),
    )
