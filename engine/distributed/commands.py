"""`denpex jobs worker` and `denpex jobs status`: Celery workers for large diagnoses, back-tests
and backfills, and a job's progress (`denpex diagnose --broker`, `denpex curate backtest
--broker` and `denpex curate backfill --broker` submit them).

Consumes a broker URL (`--broker` over the settings' `DENPEX_BROKER`; a result backend in
`DENPEX_RESULT_BACKEND` when the broker is not Redis) and a queue name; produces a running
worker, or a job's progress and, when it is done, its diagnosis. Celery is imported only by
these commands, so the rest of the command line starts without it.
"""

from __future__ import annotations

import json
import sys
import uuid
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from denpex.errors import DenpexError
from denpex.settings import Settings

if TYPE_CHECKING:
    from celery import Celery

    from denpex.distributed.celery_jobs import JobProgress

jobs_app = typer.Typer(
    help="Large diagnoses as Celery jobs: workers, and a job's progress.", no_args_is_help=True
)
_stderr = Console(stderr=True, highlight=False)

BrokerOption = Annotated[
    str | None,
    typer.Option(help="Celery broker URL, e.g. redis://host:6379/0 [DENPEX_BROKER]"),
]
QueueOption = Annotated[
    str,
    typer.Option(help="the queue (and the prefix of every Redis key) jobs of one deployment use"),
]
VisibilityOption = Annotated[
    float,
    typer.Option(
        min=1.0,
        help="with Redis: seconds before a task whose worker died is given to another worker",
    ),
]


def _configured_app(
    broker: str | None, queue: str, visibility_timeout_s: float | None = None
) -> Celery:
    """The jobs' app for `--broker` over the settings (`DENPEX_BROKER`, `DENPEX_RESULT_BACKEND`)."""
    settings = Settings().given(broker=broker)
    if settings.broker is None:
        raise DenpexError("no broker: give --broker or set DENPEX_BROKER")
    return broker_app(settings.broker, queue, settings.result_backend, visibility_timeout_s)


def broker_app(
    broker: str,
    queue: str,
    result_backend: str | None = None,
    visibility_timeout_s: float | None = None,
) -> Celery:
    """The jobs' Celery app (`result_backend`: where results go when the broker is not Redis);
    raises DenpexError when Celery is not installed."""
    try:
        from denpex.distributed.celery_jobs import DEFAULT_VISIBILITY_TIMEOUT_S, celery_app
    except ImportError as error:
        raise DenpexError(
            f"Celery jobs need the celery extra (pip install 'denpex[celery]'): {error}"
        ) from None
    return celery_app(
        broker,
        backend=result_backend,
        queue=queue,
        key_prefix=f"{queue}:",
        visibility_timeout_s=visibility_timeout_s or DEFAULT_VISIBILITY_TIMEOUT_S,
    )


def describe(progress: JobProgress) -> str:
    if progress.kind != "diagnose":
        return (
            f"{progress.kind} job {progress.id}: {progress.state}, {progress.parts_done} of "
            f"{progress.parts} tasks done ({progress.items_done} of {progress.items_total} parts)"
        )
    mib = 1024 * 1024
    return (
        f"job {progress.id}: {progress.state}, {progress.parts_done} of {progress.parts} runs "
        f"of files scanned ({progress.bytes_scanned / mib:.1f} of "
        f"{progress.bytes_total / mib:.1f} MiB)"
    )


@jobs_app.command("worker")
def worker_command(
    broker: BrokerOption = None,
    queue: QueueOption = "denpex",
    concurrency: Annotated[int, typer.Option(min=1, help="processes taking tasks")] = 2,
    visibility_timeout: VisibilityOption = 1800.0,
) -> None:
    """Run a Celery worker for denpex's jobs. It must read the paths jobs name (a shared file
    system) and reach the store a job records in."""
    try:
        app = _configured_app(broker, queue, visibility_timeout)
    except DenpexError as error:
        _stderr.print(f"denpex: {error}", markup=False, soft_wrap=True)
        raise typer.Exit(2) from None
    app.worker_main(
        [
            "worker",
            "--loglevel=INFO",
            f"--concurrency={concurrency}",
            f"--queues={queue}",
            f"--hostname=denpex-{uuid.uuid4().hex[:8]}@%h",
            "--without-gossip",
            "--without-mingle",
        ]
    )


@jobs_app.command("status")
def status_command(
    job_id: Annotated[str, typer.Argument(help="the id `denpex diagnose --broker` printed")],
    broker: BrokerOption = None,
    queue: QueueOption = "denpex",
) -> None:
    """A job's progress; once it is done, its diagnosis (or its back-test's or backfill's
    report) as JSON on standard output."""
    try:
        progress = _progress_of(broker, queue, job_id)
    except DenpexError as error:
        _stderr.print(f"denpex: {error}", markup=False, soft_wrap=True)
        raise typer.Exit(2) from None
    _stderr.print(describe(progress), markup=False)
    if progress.state == "failed":
        _stderr.print(f"denpex: job {job_id} failed: {progress.error}", markup=False)
        raise typer.Exit(1)
    if progress.diagnosis is not None:
        sys.stdout.write(progress.diagnosis.model_dump_json(indent=2) + "\n")
    if progress.report is not None:
        sys.stdout.write(json.dumps(progress.report, indent=2) + "\n")


def _progress_of(broker: str | None, queue: str, job_id: str) -> JobProgress:
    from denpex.distributed.celery_jobs import close, progress_of

    app = _configured_app(broker, queue)
    try:
        return progress_of(app, job_id)
    finally:
        close(app)
