"""The `denpex` command line.

Settings are read here, at the edge, and passed down as explicit options. Every deliberate
error becomes one line on stderr and exit code 2; a diagnosis of any status exits 0.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, NoReturn, TextIO

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn
from typer._click.exceptions import UsageError  # typer vendors click; no public alias

from denpex import __version__
from denpex.cli.hybrid import OverlayOption, StoreOption, curate_app, hybrid_app
from denpex.distributed.commands import jobs_app
from denpex.errors import DenpexError
from denpex.ingest.sources import InputLimits
from denpex.models import Diagnosis, Status
from denpex.pipeline import DiagnoseOptions, Hybrid, diagnose
from denpex.settings import Settings, secret_value
from denpex.store.errors import NotRecorded

app = typer.Typer(
    name="denpex",
    help="Explain why a distributed training or inference run failed.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
stderr = Console(stderr=True, highlight=False)


def _print_version(requested: bool) -> None:
    if requested:
        version_file = Path(str(resources.files("denpex.rules"))) / "VERSION"
        rules_version = version_file.read_text(encoding="utf-8").strip()
        sys.stdout.write(f"denpex {__version__} (rules {rules_version})\n")
        raise typer.Exit(0)


@app.callback()
def _global_options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="print the version and exit"
        ),
    ] = False,
) -> None:
    """Explain why a distributed training or inference run failed."""


class FailOn(StrEnum):
    """When `diagnose` exits 1, for CI jobs that gate on a diagnosis."""

    never = "never"
    found = "found"  # any status but no_failure: a failure was found, settled or not
    confident = "confident"  # only a confident rules answer


class OutputFormat(StrEnum):
    text = "text"
    json = "json"
    markdown = "markdown"
    html = "html"
    slack = "slack"


NOT_RECORDED = 3
"""Exit code of a diagnosis made and shown but not recorded in the incident store it was to go
to (the store cannot be opened, or refused the write)."""


def fail(message: str, code: int = 2) -> NoReturn:
    stderr.print(f"denpex: {message}", markup=False, soft_wrap=True)
    raise typer.Exit(code)


@contextmanager
def _progress(enabled: bool) -> Iterator[Callable[[str, int], None] | None]:
    if not enabled:
        yield None
        return
    with Progress(
        TextColumn("[dim]{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        console=stderr,
        transient=True,
    ) as bar:
        task = bar.add_task("scanning", total=None)

        def advance(name: str, read: int) -> None:
            bar.update(task, advance=read, description=f"scanning {name[-40:]}")

        yield advance


CacheOption = Annotated[
    bool,
    typer.Option(
        "--cache/--no-cache",
        help="keep parsed signatures and compiled databases in $DENPEX_CACHE_DIR "
        "(default ~/.cache/denpex) for fast start-up",
    ),
]
RulesOption = Annotated[
    Path | None, typer.Option("--rules", help="signature library directory (default: bundled)")
]
ExperimentalOption = Annotated[
    bool,
    typer.Option(
        "--experimental",
        help="also use signatures of status experimental (off by default: not yet proven)",
    ),
]
BackendOption = Annotated[
    str, typer.Option("--backend", help="matcher backend: auto, hyperscan or re")
]


def _hybrid_path(settings: Settings, *, required: bool = False) -> tuple[Hybrid | None, str | None]:
    """The hybrid path when a store is configured (None keeps the run rules-only), and why the
    configured store cannot be used, if it cannot. `required`: a store that cannot be opened
    is an error (a service must not run without the store its replicas share)."""
    from denpex.hybrid.cli_settings import hybrid_settings

    hybrid = hybrid_settings(settings)
    if hybrid is None:
        return None, None
    from denpex.hybrid.path import HybridPath
    from denpex.store.store import StoreError

    try:
        return HybridPath(hybrid), None
    except StoreError as error:
        if required:
            raise
        # A diagnosis is still worth having when the store is down; say what is missing now,
        # and exit NOT_RECORDED once it is shown.
        stderr.print(
            f"denpex: {error}; diagnosing with the rules only", markup=False, soft_wrap=True
        )
        return None, str(error)


def terminal_style(stream: TextIO) -> tuple[int | None, bool]:
    """(width to wrap to, colour) for text written to `stream`: a terminal's width and colour
    (unless NO_COLOR is set); a pipe or file gets whole lines, no colour, unless COLUMNS
    names a width."""
    columns = os.environ.get("COLUMNS", "")
    named = int(columns) if columns.isdigit() and 0 < len(columns) < 6 else None
    if not stream.isatty():
        return named, False
    width = named or shutil.get_terminal_size().columns
    return width, "NO_COLOR" not in os.environ


def _rendered(diagnosis: Diagnosis, output_format: OutputFormat, stream: TextIO) -> str:
    from denpex.render import RENDERERS, render_text

    if output_format is OutputFormat.text:
        width, color = terminal_style(stream)
        return render_text(diagnosis, color=color, width=width)
    return RENDERERS[output_format.value](diagnosis)


@app.command("diagnose")
def diagnose_command(
    paths: Annotated[
        list[str],
        typer.Argument(help="log files, directories, .tar/.tar.gz/.zip archives, or - for stdin"),
    ],
    output_format: Annotated[
        OutputFormat, typer.Option("--format", "-f", help="output format")
    ] = OutputFormat.text,
    rules: RulesOption = None,
    backend: BackendOption = "auto",
    threshold: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=1.0,
            help="confidence (0-1) at or above which the rules answer is confident",
        ),
    ] = 0.6,
    progress: Annotated[
        bool | None, typer.Option(help="progress bar on stderr (default: when it is a terminal)")
    ] = None,
    cache: CacheOption = True,
    store: StoreOption = None,
    index: Annotated[
        Path | None, typer.Option(help="similarity index file (default: beside the store)")
    ] = None,
    llm_model: Annotated[
        str | None, typer.Option(help="litellm model for best-effort drafts [DENPEX_LLM_MODEL]")
    ] = None,
    llm_api_base: Annotated[
        str | None, typer.Option(help="the model's API base URL [DENPEX_LLM_API_BASE]")
    ] = None,
    llm_timeout: Annotated[
        float | None, typer.Option(help="seconds to wait for the model [DENPEX_LLM_TIMEOUT]")
    ] = None,
    experimental: ExperimentalOption = False,
    overlay: OverlayOption = None,
    fail_on: Annotated[
        FailOn,
        typer.Option(help="exit 1 when a failure is found, or only when the answer is confident"),
    ] = FailOn.never,
    workers: Annotated[
        int,
        typer.Option(
            min=1,
            max=256,
            help="processes that scan the files (a local pool; the diagnosis is the same)",
        ),
    ] = 1,
    broker: Annotated[
        str | None,
        typer.Option(
            help="Celery broker URL: diagnose as a job on `denpex jobs worker`s that can read "
            "the paths; recorded in the store only when --store or DENPEX_STORE names one"
        ),
    ] = None,
    queue: Annotated[str, typer.Option(help="with --broker: the workers' queue")] = "denpex",
    parts: Annotated[
        int, typer.Option(min=1, help="with --broker: scan tasks the files are split into")
    ] = 64,
    wait: Annotated[
        bool, typer.Option(help="with --broker: wait for the diagnosis (else print the job id)")
    ] = True,
) -> None:
    """Diagnose a failed run from its logs: ranked root causes with evidence and next steps.

    Every diagnosis is recorded in the incident store (a SQLite file in the data folder unless
    --store names another, or off); one the rules do not settle gets a best-effort answer from
    similar past incidents, starting with denpex's seed history (and the LLM, when one is
    configured), and is queued for curation. --workers N spreads the scan over N local
    processes; --broker runs it as a job on Celery workers (`denpex jobs worker`)."""
    settings = Settings().given(
        rules=rules,
        store=store,
        index=index,
        overlay=overlay,
        llm_model=llm_model,
        llm_api_base=llm_api_base,
        llm_timeout=llm_timeout,
    )
    options = DiagnoseOptions(
        rules_dir=settings.rules,
        backend=backend,
        confidence_threshold=threshold,
        cache_dir=settings.cache_folder if cache else None,
        experimental=experimental,
        overlay_dir=settings.overlay,
        limits=InputLimits(**settings.reading_limits),
    )
    show_progress = stderr.is_terminal if progress is None else progress
    unrecorded: str | None = None
    try:
        if broker is not None:
            found = _diagnose_as_job(paths, options, broker, queue, parts, wait, settings)
            if found is None:
                return
            diagnosis, unrecorded = found
        else:
            hybrid, unrecorded = _hybrid_path(settings)
            with _progress(show_progress) as advance:
                diagnosis = _diagnose_here(paths, options, workers, advance, hybrid)
    except NotRecorded as refused:
        diagnosis, unrecorded = refused.diagnosis, str(refused)
    except DenpexError as error:
        fail(str(error))
    sys.stdout.write(_rendered(diagnosis, output_format, sys.stdout))
    if unrecorded is not None:
        fail(
            f"the diagnosis above was not recorded in the incident store ({unrecorded})",
            NOT_RECORDED,
        )
    if (fail_on is FailOn.found and diagnosis.status is not Status.no_failure) or (
        fail_on is FailOn.confident and diagnosis.status is Status.confident
    ):
        raise typer.Exit(1)


def _diagnose_here(
    paths: list[str],
    options: DiagnoseOptions,
    workers: int,
    advance: Callable[[str, int], None] | None,
    hybrid: Hybrid | None,
) -> Diagnosis:
    stdin = sys.stdin.buffer if "-" in paths else None
    if workers > 1:
        from denpex.distributed.local import diagnose_parallel

        return diagnose_parallel(
            paths, options, workers=workers, stdin=stdin, progress=advance, hybrid=hybrid
        )
    return diagnose(paths, options, stdin=stdin, progress=advance, hybrid=hybrid)


def _diagnose_as_job(
    paths: list[str],
    options: DiagnoseOptions,
    broker: str,
    queue: str,
    parts: int,
    wait: bool,
    settings: Settings,
) -> tuple[Diagnosis, str | None] | None:
    """Submits the diagnosis to Celery workers; with `wait`, its diagnosis and why it was not
    recorded (if it was not), else None once the job id is printed."""
    from denpex.distributed import celery_jobs
    from denpex.distributed.commands import broker_app, describe
    from denpex.store.store import store_url

    said = ""

    def show(progress: celery_jobs.JobProgress) -> None:
        nonlocal said
        line = describe(progress)
        if line != said:
            stderr.print(line, markup=False)
            said = line

    app = broker_app(broker, queue, settings.result_backend)
    named = settings.named_store
    try:
        job_id = celery_jobs.submit(
            app, paths, options, parts=parts, store_url=store_url(named) if named else None
        )
        if not wait:
            sys.stdout.write(job_id + "\n")
            return None
        progress = celery_jobs.wait(app, job_id, timeout_s=24 * 3600, on_progress=show)
    finally:
        celery_jobs.close(app)
    if progress.diagnosis is None:
        raise DenpexError(f"job {job_id} failed: {progress.error}")
    return progress.diagnosis, progress.not_recorded


@app.command("run")
def run_command_line(
    command: Annotated[list[str], typer.Argument(help="the command to run, after --")],
    bundle: Annotated[
        Path | None,
        typer.Option(
            help="where to keep the output (default: a temporary folder, kept on failure)"
        ),
    ] = None,
    collect: Annotated[
        list[Path] | None,
        typer.Option(help="more inputs to diagnose on failure, e.g. torchrun's --log-dir"),
    ] = None,
    output_format: Annotated[
        OutputFormat, typer.Option("--format", "-f", help="format of the diagnosis on stderr")
    ] = OutputFormat.text,
    rules: RulesOption = None,
    cache: CacheOption = True,
    store: StoreOption = None,
    overlay: OverlayOption = None,
) -> None:
    """Run a training command; keep its exit code and diagnose it when it fails.

    Example: denpex run --collect logs -- torchrun --nproc-per-node 8 --log-dir logs train.py
    """
    import shutil
    import tempfile

    from denpex.run import run_command

    target = bundle or Path(tempfile.mkdtemp(prefix="denpex-run-"))
    try:
        result = run_command(command, target)
    except FileNotFoundError as error:
        fail(str(error), code=127)
    if result.exit_code == 0:
        if bundle is None:
            shutil.rmtree(target, ignore_errors=True)
        raise typer.Exit(0)
    settings = Settings().given(rules=rules, store=store, overlay=overlay)
    options = DiagnoseOptions(
        rules_dir=settings.rules,
        cache_dir=settings.cache_folder if cache else None,
        overlay_dir=settings.overlay,
    )
    inputs = [str(target), *(str(p) for p in collect or [])]
    unrecorded: str | None = None
    try:
        hybrid, unrecorded = _hybrid_path(settings)
        diagnosis = diagnose(inputs, options, hybrid=hybrid)
    except NotRecorded as refused:
        diagnosis, unrecorded = refused.diagnosis, str(refused)
    except DenpexError as error:
        stderr.print(
            f"denpex: the command failed (exit {result.exit_code}) and could not be "
            f"diagnosed: {error}; its output is in {target}",
            markup=False,
        )
        raise typer.Exit(result.exit_code) from None
    (target / "diagnosis.json").write_text(diagnosis.model_dump_json(indent=2) + "\n")
    sys.stderr.write(_rendered(diagnosis, output_format, sys.stderr))
    stderr.print(
        f"denpex: exit code {result.exit_code}; output and diagnosis kept in {target}", markup=False
    )
    if unrecorded is not None:
        # The wrapper keeps the command's exit code; what it could not do is said, not hidden.
        stderr.print(
            f"denpex: the diagnosis was not recorded in the incident store ({unrecorded})",
            markup=False,
            soft_wrap=True,
        )
    raise typer.Exit(result.exit_code)


def api_bounds(settings: Settings) -> dict[str, Any]:
    """The `ApiSettings` bounds the settings give (`DENPEX_MAX_*`, `DENPEX_REQUEST_*_LIMIT`);
    one not set keeps the service's default."""
    from denpex.api.service import API_MAX_UNPACKED_BYTES

    bounds: dict[str, Any] = {
        "limits": InputLimits(
            **{"max_unpacked_bytes": API_MAX_UNPACKED_BYTES, **settings.reading_limits}
        )
    }
    if settings.max_body_bytes is not None:
        bounds["max_body_bytes"] = settings.max_body_bytes
    if settings.request_time_limit is not None:
        bounds["request_time_limit_s"] = settings.request_time_limit
    if settings.request_memory_limit is not None:
        bounds["request_memory_limit"] = settings.request_memory_limit
    return bounds


@app.command("serve")
def serve_command(
    tenants: Annotated[
        Path,
        typer.Option(
            help='JSON file: {"tenant": "secret"} or {"tenant": {"secret": ..., "features": [...]}}'
        ),
    ],
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to listen on")] = 8080,
    rules: RulesOption = None,
    cache: CacheOption = True,
    store: StoreOption = None,
    job_threshold: Annotated[
        int, typer.Option(min=0, help="bodies over this many bytes become jobs (202 + status URL)")
    ] = 8 * 1024 * 1024,
    job_workers: Annotated[int, typer.Option(min=1, max=64, help="threads running jobs")] = 2,
    job_lease: Annotated[
        float,
        typer.Option(
            min=1.0,
            max=3600.0,
            help="with a store: seconds a replica's claim on a job lasts unless renewed; a job "
            "whose replica died is run again by another after about this long",
        ),
    ] = 30.0,
    slack_tenant: Annotated[
        str | None,
        typer.Option(
            help="tenant the Slack slash command diagnoses for; needs the signing secret in "
            "$DENPEX_SLACK_SIGNING_SECRET"
        ),
    ] = None,
    overlay: OverlayOption = None,
) -> None:
    """Serve the HTTP API (signed per tenant), the paste page at / and the API docs at /docs.

    Diagnoses go through the hybrid path `denpex diagnose` uses and are recorded per tenant in
    the same incident store (--store or DENPEX_STORE; `off` keeps the rules only). Replicas
    sharing one store (PostgreSQL) share its replay protection, its recorded diagnoses and its
    jobs: any replica runs a queued job, and a job whose replica died is run again by another.
    With an overlay too (--overlay or DENPEX_OVERLAY), the curation resources under
    /v1/curation serve the queue, confirm, reject, propose, backtest and promote.

    Each request is bounded by settings: DENPEX_MAX_BODY_BYTES (256 MiB),
    DENPEX_REQUEST_TIME_LIMIT (120 s), DENPEX_REQUEST_MEMORY_LIMIT (4 GiB of address space for
    reading one request, in a worker process; 0: off), DENPEX_MAX_UNPACKED_BYTES (2 GiB here),
    DENPEX_MAX_MEMBERS,
    DENPEX_MAX_NESTING, DENPEX_MAX_DIRECTORY_DEPTH and DENPEX_MAX_DUMP_BYTES, _CONTAINERS and
    _DEPTH; a request past one gets a problem document that says which."""
    import uvicorn

    from denpex.api.app import ApiSettings, create_app
    from denpex.auth import NonceLedger, tenants_from_config

    try:
        configured = tenants_from_config(json.loads(tenants.read_text(encoding="utf-8")))
    except (OSError, ValueError) as error:
        fail(f"{tenants}: cannot use the tenants file ({error})")
    environment = Settings().given(rules=rules, store=store, overlay=overlay)
    slack_secret = secret_value(environment.slack_signing_secret)
    if slack_tenant is not None and slack_tenant not in configured:
        fail(f"--slack-tenant {slack_tenant!r} is not a tenant in {tenants}")
    if slack_tenant is not None and slack_secret is None:
        fail("--slack-tenant needs Slack's signing secret in $DENPEX_SLACK_SIGNING_SECRET")
    settings = ApiSettings(
        tenants=configured,
        rules_dir=environment.rules,
        cache_dir=environment.cache_folder if cache else None,
        overlay_dir=environment.overlay,
        **api_bounds(environment),
        job_threshold_bytes=job_threshold,
        job_workers=job_workers,
        job_lease_s=job_lease,
        slack_signing_secret=slack_secret,
        slack_tenant=slack_tenant,
        job_body_key=secret_value(environment.job_body_key),
    )
    try:
        hybrid, _ = _hybrid_path(environment, required=True)
        if hybrid is not None:  # queued bodies are sealed: a key that cannot be used stops here
            from denpex.store.sealing import seal_for

            seal_for(settings.job_body_key, hybrid.store)  # type: ignore[attr-defined]
    except DenpexError as error:
        fail(str(error))
    nonces: NonceLedger | None = None
    curation = None
    if hybrid is not None:
        from denpex.store.nonces import StoreNonces

        store_of = hybrid.store  # type: ignore[attr-defined]
        nonces = StoreNonces(store_of)
        if settings.overlay_dir is not None:
            from denpex.curation.settings import (
                CurationSettings,
                default_eval_dirs,
                default_healthy,
            )

            here = Path.cwd()
            curation = CurationSettings(
                store_url=hybrid.settings.store_url,  # type: ignore[attr-defined]
                overlay_dir=settings.overlay_dir,
                eval_dirs=default_eval_dirs(here),
                healthy=default_healthy(here),
                rules_dir=environment.rules,
                cache_dir=settings.cache_dir,
            )
    uvicorn.run(
        create_app(settings, nonces, hybrid=hybrid, curation=curation),
        host=host,
        port=port,
        log_level="info",
    )


class HangFormat(StrEnum):
    text = "text"
    json = "json"


@app.command("bundle")
def bundle_command(
    folder: Annotated[Path, typer.Argument(help="this node's logs and dumps (a folder or a file)")],
    job: Annotated[str, typer.Option(help="the job's name, the same on every node")],
    tenant: Annotated[
        str, typer.Option(help="the API tenant; its secret in $DENPEX_TENANT_SECRET")
    ],
    node: Annotated[
        str | None, typer.Option(help="this node's name (default: the host name)")
    ] = None,
    cluster: Annotated[str, typer.Option(help="the cluster the job ran on")] = "default",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="where to write the bundle")
    ] = None,
    send: Annotated[
        str | None,
        typer.Option(help="the denpex service's URL: send the bundle to it (POST /v1/bundles)"),
    ] = None,
    rules: RulesOption = None,
    cache: CacheOption = True,
    experimental: ExperimentalOption = False,
    overlay: OverlayOption = None,
) -> None:
    """Extract this node's evidence into a small bundle signed for the tenant.

    The node's logs are scanned here; the bundle holds what the diagnosis reads of them (matches
    with their lines and context, abnormal and progress lines, dump summaries, digests), not the
    logs. The service diagnoses the job from its nodes' bundles (POST /v1/bundles/JOB/diagnosis)
    exactly as `denpex diagnose NODE1 NODE2 ...` would, each NODE a folder of that node's logs."""
    import socket

    from denpex.distributed.bundles import BundleName, make_bundle
    from denpex.distributed.local import scan_settings

    settings = Settings().given(rules=rules, overlay=overlay)
    secret = secret_value(settings.tenant_secret)
    if not secret:
        fail("the tenant's secret is needed in $DENPEX_TENANT_SECRET to sign the bundle")
    options = DiagnoseOptions(
        rules_dir=settings.rules,
        cache_dir=settings.cache_folder if cache else None,
        experimental=experimental,
        overlay_dir=settings.overlay,
    )
    try:
        name = BundleName(tenant, cluster, job, node or socket.gethostname().split(".")[0])
        data = make_bundle(str(folder), name, secret, scan_settings(options, digests=True))
    except DenpexError as error:
        fail(str(error))
    target = output or Path(f"{name.job}-{name.node}.denpex.gz")
    target.write_bytes(data)
    stderr.print(
        f"denpex: {target} ({len(data)} bytes) for job {job}, node {name.node}", markup=False
    )
    if send is not None:
        _send_bundle(send, tenant, secret, data)


def _send_bundle(base: str, tenant: str, secret: str, data: bytes) -> None:
    import urllib.error
    import urllib.request

    from denpex.auth import signed_headers

    path = "/v1/bundles"
    request = urllib.request.Request(
        base.rstrip("/") + path,
        data=data,
        method="POST",
        headers={
            **signed_headers(secret, tenant, "POST", path, data),
            "Content-Type": "application/gzip",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            answer = json.loads(response.read())
    except urllib.error.HTTPError as error:
        detail = error.read().decode("utf-8", "replace")[:500]
        fail(f"{base} refused the bundle ({error.code}): {detail}")
    except (urllib.error.URLError, OSError, ValueError) as error:
        fail(f"cannot send the bundle to {base}: {error}")
    stderr.print(
        f"denpex: sent; job {answer['job']} has bundles from {len(answer['nodes'])} node(s)",
        markup=False,
    )


@app.command("hang")
def hang_command(
    paths: Annotated[
        list[str],
        typer.Argument(help="Flight Recorder dumps (fr_dump_<rank>, pickle or JSON) and logs"),
    ],
    output_format: Annotated[
        HangFormat, typer.Option("--format", "-f", help="output format")
    ] = HangFormat.text,
    scheduler: Annotated[
        str | None, typer.Option(help="slurm or kubernetes: the isolation plan's commands")
    ] = None,
    world_size: Annotated[
        int | None, typer.Option(min=1, help="the job's world size (Gloo dumps do not say)")
    ] = None,
    rank_hosts: Annotated[
        Path | None, typer.Option(help="file of 'RANK HOST [GPU]' lines stating where ranks ran")
    ] = None,
    capture_times: Annotated[
        Path | None, typer.Option(help="JSON of dump name to capture time (epoch or ISO 8601)")
    ] = None,
    capture_from_mtime: Annotated[
        bool, typer.Option(help="take each dump file's mtime as its capture time")
    ] = False,
    rules: RulesOption = None,
    backend: BackendOption = "auto",
    cache: CacheOption = True,
) -> None:
    """Find the ranks behind a hang from every rank's Flight Recorder dump; never runs a plan.

    Reads the inputs as `denpex diagnose` does (the same evidence, the same culprit): the world
    size is inferred from the logs and dump names unless --world-size states it."""
    from denpex.hang.models import Scheduler
    from denpex.hang.render import to_json, to_text
    from denpex.hang_view import HangRequest, hang_from_paths

    settings = Settings().given(rules=rules)
    if scheduler is not None and scheduler not in {s.value for s in Scheduler}:
        fail(f"--scheduler must be slurm or kubernetes, not {scheduler!r}")
    request = HangRequest(
        paths=paths,
        scheduler=Scheduler(scheduler) if scheduler else None,
        world_size=world_size,
        rank_hosts_file=rank_hosts,
        capture_times_file=capture_times,
        capture_from_mtime=capture_from_mtime,
        rules_dir=settings.rules,
        backend=backend,
        cache_dir=settings.cache_folder if cache else None,
        limits=InputLimits(**settings.reading_limits),
    )
    try:
        report = hang_from_paths(request, stdin=sys.stdin.buffer if "-" in paths else None)
    except DenpexError as error:
        fail(str(error))
    sys.stdout.write((to_json if output_format is HangFormat.json else to_text)(report))


@app.command("schema")
def schema_command() -> None:
    """Print the JSON Schema of the diagnosis (the output contract)."""
    from denpex.schemas import diagnosis_schema

    sys.stdout.write(json.dumps(diagnosis_schema(), indent=2) + "\n")


@app.command("version")
def version_command() -> None:
    """Print denpex's version and the signature library's."""
    from denpex.signatures.library import load_library

    try:
        library = load_library(cache_dir=Settings().cache_folder)
    except DenpexError as error:
        fail(str(error))
    sys.stdout.write(f"denpex {__version__}, rules {library.label}\n")


@app.command("eval")
def eval_command(
    corpus: Annotated[Path, typer.Argument(help="directory of cases, each with expected.json")],
    output_format: Annotated[
        OutputFormat, typer.Option("--format", "-f", help="text or json")
    ] = OutputFormat.text,
    by_signature: Annotated[
        bool, typer.Option("--by-signature", help="per-signature precision and recall")
    ] = False,
    check: Annotated[
        Path | None, typer.Option(help="JSON file of min_/max_ thresholds; exit 1 if broken")
    ] = None,
    unseen: Annotated[
        bool,
        typer.Option(
            "--unseen",
            help="also re-diagnose each case without the signature family that settled it",
        ),
    ] = False,
    cache: CacheOption = True,
    rules: RulesOption = None,
    backend: BackendOption = "auto",
    threshold: Annotated[float, typer.Option(help="confidence threshold of the gate")] = 0.6,
    experimental: ExperimentalOption = False,
) -> None:
    """Diagnose every labelled case of a corpus and measure accuracy, calibration and speed."""
    from denpex.evaluation.corpus import check_thresholds, evaluate, held_out
    from denpex.evaluation.render import render_eval_text
    from denpex.signatures.library import load_library

    settings = Settings().given(rules=rules)
    cache_dir = settings.cache_folder if cache else None
    options = DiagnoseOptions(
        rules_dir=settings.rules,
        backend=backend,
        confidence_threshold=threshold,
        cache_dir=cache_dir,
        experimental=experimental,
    )
    try:
        library = load_library(rules, include_experimental=experimental, cache_dir=cache_dir)
        report = evaluate(corpus, library, options)
        if unseen:
            report.held_out = held_out(corpus, report, library, options, cache_dir)
        limits = json.loads(check.read_text()) if check is not None else {}
    except (DenpexError, OSError, ValueError) as error:
        fail(str(error))
    if not by_signature:
        report = report.model_copy(update={"by_signature": []})
    if output_format is OutputFormat.json:
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
    else:
        sys.stdout.write(render_eval_text(report))
    broken = check_thresholds(report, limits)
    for line in broken:
        stderr.print(f"denpex eval: {line}", markup=False)
    if broken:
        raise typer.Exit(1)


rules_app = typer.Typer(help="Check and browse the signature library.", no_args_is_help=True)
app.add_typer(rules_app, name="rules")
app.add_typer(curate_app, name="curate")
app.add_typer(hybrid_app, name="hybrid")
app.add_typer(jobs_app, name="jobs")


@rules_app.command("lint")
def rules_lint_command(rules: RulesOption = None, overlay: OverlayOption = None) -> None:
    """Schema, unique ids, taxonomy, both backends, pattern hygiene and every example (of the
    overlay too, when one is given)."""
    from denpex.match.lint import lint

    problems = lint(rules, Settings().cache_folder, overlay)
    for problem in problems:
        sys.stdout.write(f"{problem}\n")
    if problems:
        fail(f"{len(problems)} problem(s) in the signature library", code=1)
    sys.stdout.write("signature library is clean\n")


@rules_app.command("test")
def rules_test_command(rules: RulesOption = None) -> None:
    """Run every signature's match and near-miss examples in every available backend."""
    from denpex.match.lint import example_problems
    from denpex.signatures.backends import available_backends
    from denpex.signatures.library import load_library

    try:
        library = load_library(rules, include_experimental=True, cache_dir=Settings().cache_folder)
    except DenpexError as error:
        fail(str(error))
    examples = sum(len(s.examples.match) + len(s.examples.no_match) for s in library.signatures)
    problems = []
    for backend in available_backends():
        problems += example_problems(library, backend, Settings().cache_folder)
    for problem in problems:
        sys.stdout.write(f"{problem}\n")
    backends = ", ".join(available_backends())
    summary = (
        f"{len(library.signatures)} signatures, {examples} examples, backends {backends}: "
        f"{len(problems)} failure(s)"
    )
    if problems:
        fail(summary, code=1)
    sys.stdout.write(summary + "\n")


@rules_app.command("coverage")
def rules_coverage_command(rules: RulesOption = None) -> None:
    """Per emitter and release line: messages found in its source, mapped, kept as context,
    excluded, and the signatures generated (from the catalogs' CATALOG.json files)."""
    from rich.table import Table

    from denpex.signatures.coverage import read_coverage

    try:
        emitters = read_coverage(rules)
    except DenpexError as error:
        fail(str(error))
    if not emitters:
        fail("no catalog in the signature library (no rules/*_cat/CATALOG.json)")
    table = Table(title="catalog coverage", show_lines=False)
    for column in ("emitter", "release", "ref", "found", "mapped", "context", "excluded"):
        table.add_column(column, no_wrap=True, justify="right" if column == "found" else "left")
    table.add_column("signatures", justify="right")
    for emitter in emitters:
        for row in [*emitter.releases, emitter.total]:
            table.add_row(
                emitter.emitter if row is emitter.releases[0] else "",
                row.line,
                row.ref[:12],
                str(row.found),
                f"{row.mapped} ({row.share(row.mapped)})",
                str(row.context),
                str(row.excluded),
                str(row.signatures),
            )
    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=200)
    console.print(table)
    generated = sum(e.total.signatures for e in emitters)
    sys.stdout.write(
        f"{len(emitters)} emitter(s), {sum(e.total.found for e in emitters)} messages, "
        f"{generated} generated signatures\n"
    )


@rules_app.command("list")
def rules_list_command(
    family: Annotated[str | None, typer.Option(help="only this family, e.g. xid")] = None,
    rules: RulesOption = None,
) -> None:
    """One line per signature: id, role, failure class, prior confidence, title."""
    from rich.table import Table

    from denpex.signatures.library import load_library

    try:
        library = load_library(rules, include_experimental=True, cache_dir=Settings().cache_folder)
    except DenpexError as error:
        fail(str(error))
    table = Table(title=f"signature library {library.label}", show_lines=False)
    for column in ("id", "status", "role", "failure class", "prior"):
        table.add_column(column, no_wrap=True)
    table.add_column("title")
    shown = [s for s in library.signatures if family is None or s.family == family]
    for signature in shown:
        table.add_row(
            signature.id,
            signature.status,
            signature.role,
            signature.failure_class or "-",
            f"{signature.confidence:.2f}",
            signature.title,
        )
    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=200)  # piped: one signature per line
    console.print(table)
    if family is not None and not shown:
        fail(f"no signatures in family {family!r}")


def main() -> None:
    """Runs the app; a usage error is one line on stderr and exit code 2, like any other."""
    try:
        code = app(standalone_mode=False)
    except UsageError as error:
        command = error.ctx.command_path if error.ctx is not None else "denpex"
        stderr.print(
            f"denpex: {error.format_message()} (see '{command} --help')",
            markup=False,
            soft_wrap=True,
        )
        sys.exit(2)
    except ValidationError as error:  # a DENPEX_* variable that is not a valid value
        stderr.print(f"denpex: {_setting_problem(error)}", markup=False, soft_wrap=True)
        sys.exit(2)
    except (KeyboardInterrupt, typer.Abort):
        stderr.print("denpex: interrupted")
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)


def _setting_problem(error: ValidationError) -> str:
    """One line for the first invalid setting: its variable, its value and what is wrong."""
    first = error.errors()[0]
    name = ".".join(str(part) for part in first.get("loc", ()))
    given = first.get("input")
    secret = any(word in name for word in ("secret", "key"))
    shown = f"={given!r}" if isinstance(given, str | int | float) and not secret else ""
    return f"DENPEX_{name.upper()}{shown}: {first.get('msg', 'invalid value')}"
