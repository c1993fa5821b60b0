"""Command-line pieces of the hybrid path: settings from the environment, `curate`, evaluations.

Settings are read at the edge (`denpex.settings`): options given on the command line win over
`DENPEX_*` environment variables, which win over the defaults. Nothing is imported until a
command needs it, so `denpex diagnose` without a store starts as fast as before.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from denpex.errors import DenpexError
from denpex.settings import Settings

if TYPE_CHECKING:
    from denpex.curation.backtest import Backtest
    from denpex.curation.settings import CurationSettings
    from denpex.retrieval.embedder import Embedder
    from denpex.store.store import IncidentStore


def _fail(message: str, code: int = 2) -> typer.Exit:
    sys.stderr.write(f"denpex: {message}\n")
    return typer.Exit(code)


StoreOption = Annotated[
    str | None,
    typer.Option(
        "--store",
        help="incident store: a SQLite file, a SQLAlchemy URL, or off [DENPEX_STORE; default: "
        "incidents.sqlite in $DENPEX_DATA_DIR or ~/.local/share/denpex]",
    ),
]

OverlayOption = Annotated[
    Path | None,
    typer.Option(
        "--overlay",
        help="overlay folder of curated signatures, loaded on top of the packaged library "
        "[DENPEX_OVERLAY]",
    ),
]

curate_app = typer.Typer(
    help="Review incidents the rules did not settle, and confirm their causes.",
    no_args_is_help=True,
)


def _open(store: str | None) -> IncidentStore:
    from denpex.store.store import open_store, store_url

    chosen = Settings().given(store=store).chosen_store
    if chosen is None:
        raise _fail("the incident store is turned off (DENPEX_STORE=off): give --store")
    try:
        return open_store(store_url(chosen))
    except DenpexError as error:
        raise _fail(str(error)) from None


@curate_app.command("list")
def curate_list(
    store: StoreOption = None,
    state: Annotated[
        str, typer.Option(help="queued, confirmed, rejected, resolved, not_queued, or all")
    ] = "queued",
    limit: Annotated[int, typer.Option(min=1, help="at most this many, newest first")] = 50,
    grouped: Annotated[
        bool, typer.Option("--grouped", help="the queue as groups of alike incidents (= queue)")
    ] = False,
) -> None:
    """Incidents waiting for a curator (or in another state), newest first; with --grouped,
    the queue's groups of alike incidents, most recurrent first (`denpex curate queue`)."""
    if grouped:
        curate_queue(store)
        return
    opened = _open(store)
    try:
        rows = opened.list_incidents(None if state == "all" else state, limit)
    except DenpexError as error:
        raise _fail(str(error)) from None
    for row in rows:
        cause = row.confirmed_class or row.failure_class or "-"
        confidence = f"{row.confidence:.2f}" if row.confidence is not None else "-"
        sys.stdout.write(
            f"{row.id[:12]}  {row.created_at:%Y-%m-%d %H:%M}  {row.status:<11} "
            f"{row.curation_state:<10} {cause:<24} {confidence:>5}  {row.summary[:90]}\n"
        )
    if not rows:
        sys.stdout.write(f"no incidents in state {state}\n")


@curate_app.command("show")
def curate_show(
    incident_id: Annotated[str, typer.Argument(help="incident id or a unique prefix of it")],
    store: StoreOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="the whole record as JSON")] = False,
) -> None:
    """One incident: its diagnosis, the abnormal lines it was retrieved by, and its inputs."""
    opened = _open(store)
    try:
        incident = opened.get(incident_id)
    except DenpexError as error:
        raise _fail(str(error)) from None
    if as_json:
        sys.stdout.write(incident.model_dump_json(indent=2) + "\n")
        return
    from denpex.render import RENDERERS

    sys.stdout.write(
        f"incident {incident.id} ({incident.created_at:%Y-%m-%d %H:%M:%S} UTC)\n"
        f"curation: {incident.curation_state}"
        + (
            f", confirmed {incident.confirmed_class} by {incident.confirmed_by or 'unknown'}"
            if incident.confirmed_class
            else ""
        )
        + "\n\n"
    )
    sys.stdout.write(RENDERERS["text"](incident.diagnosis))
    sys.stdout.write("\nabnormal lines (causal order):\n")
    for line in incident.excerpt:
        who = f"rank {line.rank}" if line.rank is not None else "rank ?"
        sys.stdout.write(f"  {line.source}:{line.line} {who}: {line.text[:200]}\n")
    sys.stdout.write("\ninputs:\n")
    for item in incident.inputs:
        sys.stdout.write(
            f"  {item.source} ({item.kind}, {item.bytes} bytes) {item.sha256 or '-'}\n"
        )


@curate_app.command("confirm")
def curate_confirm(
    incident_id: Annotated[str, typer.Argument(help="incident id or a unique prefix of it")],
    failure_class: Annotated[str, typer.Option("--class", help="the failure class it really was")],
    store: StoreOption = None,
    by: Annotated[str | None, typer.Option(help="who confirms (recorded)")] = None,
    note: Annotated[str | None, typer.Option(help="why, in a sentence (recorded)")] = None,
) -> None:
    """Record the confirmed cause of an incident; retrieval uses it from now on."""
    opened = _open(store)
    try:
        incident = opened.confirm(incident_id, failure_class, by=by, note=note)
    except DenpexError as error:
        raise _fail(str(error)) from None
    sys.stdout.write(f"incident {incident.id[:12]} confirmed as {failure_class}\n")


@curate_app.command("seed")
def curate_seed(store: StoreOption = None) -> None:
    """Add denpex's seed history (its labelled eval cases) to a store; the default store gets it
    by itself before its first retrieval."""
    from denpex import __version__
    from denpex.retrieval.seed import load_seed, seed_store

    opened = _open(store)
    try:
        added = seed_store(opened, load_seed(), denpex_version=__version__, rules_version="seed")
    except DenpexError as error:
        raise _fail(str(error)) from None
    sys.stdout.write(f"{added} seed incident(s) added to {opened.url}\n")


hybrid_app = typer.Typer(
    help="Measure the hybrid path on labelled case directories (<dir>/<case>/expected.json).",
    no_args_is_help=True,
)

CorpusArgument = Annotated[
    list[Path],
    typer.Argument(
        help="directories of cases, each case with expected.json (evals/corpus evals/heldout)"
    ),
]


def _embedder() -> Embedder:
    from denpex.retrieval.embedder import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


@hybrid_app.command("eval-retrieval")
def eval_retrieval(
    corpus: CorpusArgument,
    as_json: Annotated[
        bool, typer.Option("--json", help="every case's neighbours as JSON")
    ] = False,
) -> None:
    """Leave-one-out nearest-incident class accuracy at k=1 and k=5."""
    from denpex.evaluation.retrieval import evaluate_retrieval
    from denpex.signatures.library import load_library

    with tempfile.TemporaryDirectory(prefix="denpex-eval-") as workdir:
        try:
            report = evaluate_retrieval(
                corpus,
                workdir=Path(workdir),
                library=load_library(cache_dir=Settings().cache_folder),
                embedder=_embedder(),
                cache_dir=Settings().cache_folder,
            )
        except DenpexError as error:
            raise _fail(str(error)) from None
    if as_json:
        sys.stdout.write(json.dumps(report.as_dict(), indent=2) + "\n")
        return
    for result in report.results:
        mark = "ok " if result.at_1 == result.expected else "MISS"
        nearest = ", ".join(f"{case} ({cls}, {sim:.2f})" for case, cls, sim in result.nearest[:3])
        sys.stdout.write(
            f"{mark} {result.case}: {result.expected} -> @1 {result.at_1}, "
            f"@5 {result.at_5}; {nearest}\n"
        )
    sys.stdout.write(
        f"\n{len(report.results)} labelled case(s), {len(report.clean_cases)} clean skipped: "
        f"accuracy@1 {report.accuracy_at_1:.3f}, accuracy@5 {report.accuracy_at_5:.3f}, "
        f"hit@5 {report.hit_at_5:.3f}\n"
    )


@hybrid_app.command("eval-family-out")
def eval_family_out(
    corpus: CorpusArgument,
    family: Annotated[
        list[str] | None, typer.Option(help="only these families (default: every one)")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="every case as JSON")] = False,
) -> None:
    """Remove one signature family at a time; does retrieval still name the right class?"""
    from denpex.evaluation.family_out import evaluate_family_out
    from denpex.signatures.library import load_library

    with tempfile.TemporaryDirectory(prefix="denpex-eval-") as workdir:
        try:
            report = evaluate_family_out(
                corpus,
                workdir=Path(workdir),
                library=load_library(cache_dir=Settings().cache_folder),
                embedder=_embedder(),
                families=family,
                cache_dir=Settings().cache_folder,
            )
        except DenpexError as error:
            raise _fail(str(error)) from None
    if as_json:
        sys.stdout.write(json.dumps(report.as_dict(), indent=2) + "\n")
        return
    for outcome in report.outcomes:
        sys.stdout.write(
            f"{outcome.family:<14} {outcome.case:<24} expected {outcome.expected:<24} "
            f"now {outcome.status:<11} {outcome.named or '-':<24} via {outcome.source or '-'}"
            f"{'  RIGHT' if outcome.right_best_effort else ''}\n"
        )
    sys.stdout.write("\n" + report.summary_text() + "\n")


# closing the loop: reject, queue groups, propose, backtest, promote (denpex.curation) ------

EvalsOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--evals",
        help="labelled case directories to back-test on (default: evals/corpus and "
        "evals/heldout under the current folder, when present)",
    ),
]
HealthyOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--healthy",
        help="logs of healthy runs a draft must not fire on (default: evals/healthy under the "
        "current folder, when present; clean labelled cases count too)",
    ),
]
BackendChoice = Annotated[
    str, typer.Option("--backend", help="matcher backend: auto, hyperscan or re")
]
JobWorkers = Annotated[
    int, typer.Option("--workers", min=1, help="local processes sharing the parts (no broker)")
]
JobBroker = Annotated[
    str | None,
    typer.Option(
        "--broker",
        help="Celery broker URL: run as a job on `denpex jobs worker`s that reach the store and "
        "the files",
    ),
]
JobQueue = Annotated[str, typer.Option("--queue", help="with --broker: the workers' queue")]
JobParts = Annotated[
    int, typer.Option("--parts", min=1, help="with --broker: tasks the parts are split into")
]


def _run_job(
    kind: str,
    parts: list[dict],
    context: dict,
    *,
    workers: int,
    broker: str | None,
    queue: str,
    tasks: int,
) -> dict:
    """A back-test's or backfill's report: in this process or a local process pool (the
    default), or as a Celery job; progress (parts done of all) on standard error."""
    said = ""

    def show(line: str) -> None:
        nonlocal said
        if line != said:
            sys.stderr.write(line + "\n")
            said = line

    if broker is None:
        from denpex.distributed.batch import run_local

        return run_local(
            kind,
            parts,
            context,
            workers=workers,
            progress=lambda done, total: show(f"{kind}: {done} of {total} parts done"),
        )
    from denpex.distributed import celery_jobs
    from denpex.distributed.commands import broker_app, describe

    app = broker_app(broker, queue, Settings().result_backend)
    try:
        job_id = celery_jobs.submit_parts(app, kind, parts, context, runs=tasks)
        show(f"{kind} job {job_id} submitted: {len(parts)} parts in up to {tasks} tasks")
        ended = celery_jobs.wait(
            app, job_id, timeout_s=24 * 3600, on_progress=lambda p: show(describe(p))
        )
    finally:
        celery_jobs.close(app)
    if ended.report is None:
        raise DenpexError(f"job {job_id} failed: {ended.error}")
    return ended.report


def _curation(
    store: str | None,
    overlay: Path | None,
    evals: list[Path] | None = None,
    healthy: list[Path] | None = None,
    backend: str = "auto",
) -> CurationSettings:
    from denpex.curation.settings import CurationSettings, default_eval_dirs, default_healthy
    from denpex.store.store import store_url

    settings = Settings().given(store=store, overlay=overlay)
    chosen = settings.chosen_store
    if chosen is None:
        raise _fail("the incident store is turned off (DENPEX_STORE=off): give --store")
    folder = settings.overlay
    if folder is None:
        raise _fail(
            "no overlay folder is configured: give --overlay or set DENPEX_OVERLAY (curated "
            "signatures are written there, never into the packaged library)"
        )
    here = Path.cwd()
    return CurationSettings(
        store_url=store_url(chosen),
        overlay_dir=folder,
        rules_dir=settings.rules,
        eval_dirs=tuple(evals) if evals is not None else default_eval_dirs(here),
        healthy=tuple(healthy) if healthy is not None else default_healthy(here),
        cache_dir=settings.cache_folder,
        backend=backend,
    )


@curate_app.command("reject")
def curate_reject(
    incident_id: Annotated[str, typer.Argument(help="incident id or a unique prefix of it")],
    store: StoreOption = None,
    by: Annotated[str | None, typer.Option(help="who rejects (recorded)")] = None,
    note: Annotated[str | None, typer.Option(help="why, in a sentence (recorded)")] = None,
) -> None:
    """Take an incident off the queue without a cause (a test job, a duplicate report)."""
    opened = _open(store)
    try:
        incident = opened.reject(incident_id, by=by, note=note)
    except DenpexError as error:
        raise _fail(str(error)) from None
    sys.stdout.write(f"incident {incident.id[:12]} rejected\n")


@curate_app.command("queue")
def curate_queue(
    store: StoreOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="the groups as JSON")] = False,
) -> None:
    """Queued incidents grouped by the templates of their abnormal lines, most recurrent
    first: each group's evidence, best-effort draft and similar incidents."""
    from denpex.curation.queue import build_queue

    opened = _open(store)
    try:
        groups = build_queue(opened)
    except DenpexError as error:
        raise _fail(str(error)) from None
    if as_json:
        sys.stdout.write(json.dumps([g.as_dict() for g in groups], indent=2) + "\n")
        return
    if not groups:
        sys.stdout.write("the curation queue is empty\n")
    for number, entry in enumerate(groups, start=1):
        first = entry.representative
        causes = ", ".join(
            f"{c.failure_class} {c.confidence:.2f}" for c in first.diagnosis.root_causes[:3]
        )
        sys.stdout.write(
            f"group {number}: {len(entry.incidents)} incident(s), newest {first.id[:12]} "
            f"({first.created_at:%Y-%m-%d %H:%M}); best effort: {first.status} {causes or '-'}\n"
        )
        for line in entry.evidence[:3]:
            sys.stdout.write(f"    {line.source}:{line.line}: {line.text[:150]}\n")
        ids = ", ".join(i.id[:12] for i in entry.incidents)
        sys.stdout.write(f"  incidents: {ids}\n")
        for similar in entry.similar[:3]:
            sys.stdout.write(
                f"  similar: {similar.incident_id[:12]} ({similar.curation_state}, "
                f"{similar.label or 'no known cause'}; {similar.shared_lines} shared line(s))\n"
            )


@curate_app.command("propose")
def curate_propose(
    incident_id: Annotated[str, typer.Argument(help="a confirmed incident's id or prefix")],
    store: StoreOption = None,
    overlay: OverlayOption = None,
    evals: EvalsOption = None,
    healthy: HealthyOption = None,
) -> None:
    """Draft a signature from a confirmed incident's distinctive lines (Drain3 templates,
    named captures, class data from the taxonomy, near misses as no-match examples); the
    draft is a YAML file in the overlay's .drafts/ folder, to edit before backtest/promote."""
    from denpex.curation.overlay import Overlay
    from denpex.curation.promote import current_library
    from denpex.curation.propose import propose

    settings = _curation(store, overlay, evals, healthy)
    opened = _open(store)
    try:
        library = current_library(settings)
        ids = {s.id for s in Overlay(settings.overlay_dir).signatures()}
        draft = propose(incident_id, opened, library, settings, overlay_ids=ids)
    except DenpexError as error:
        raise _fail(str(error)) from None
    sys.stdout.write(draft.text)
    sys.stdout.write(f"\n# draft written to {draft.path}\n")


@curate_app.command("backtest")
def curate_backtest(
    draft: Annotated[Path, typer.Argument(help="the draft signature's YAML file")],
    store: StoreOption = None,
    overlay: OverlayOption = None,
    evals: EvalsOption = None,
    healthy: HealthyOption = None,
    backend: BackendChoice = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="the back-test as JSON")] = False,
    workers: JobWorkers = 1,
    broker: JobBroker = None,
    queue: JobQueue = "denpex",
    parts: JobParts = 8,
) -> None:
    """What the draft would match and change: stored incidents, labelled cases (before and
    after it joins the library) and healthy logs. Exits 1 when promote would refuse it.
    Each incident, case and healthy log is a part: --workers N shares them among N local
    processes, --broker runs them as a Celery job (`denpex jobs worker`)."""
    from denpex.curation.backtest import Backtest, backtest_parts
    from denpex.curation.promote import read_draft

    settings = _curation(store, overlay, evals, healthy, backend)
    opened = _open(store)
    try:
        signature, _ = read_draft(draft)
        context = {"draft": signature.model_dump(mode="json"), "settings": settings.as_json()}
        found = backtest_parts(opened, settings)
        report = Backtest.of(
            _run_job(
                "backtest",
                found,
                context,
                workers=workers,
                broker=broker,
                queue=queue,
                tasks=parts,
            )
        )
    except DenpexError as error:
        raise _fail(str(error)) from None
    if as_json:
        sys.stdout.write(json.dumps(report.as_dict(), indent=2, default=str) + "\n")
    else:
        sys.stdout.write(_backtest_text(report))
    if report.refusals():
        raise typer.Exit(1)


def _backtest_text(report: Backtest) -> str:
    out = [f"back-test of {report.signature_id} ({report.failure_class})"]
    for title, hits in (
        ("stored incidents", report.incidents),
        ("labelled cases", report.evals),
    ):
        changed = sum(1 for h in hits if h.changes)
        out.append(f"{title} it matches: {len(hits)}, of which it changes {changed}")
        for hit in hits:
            mark = "HARMS" if hit.harms else ("changes" if hit.changes else "same")
            label = f" (confirmed {hit.label})" if hit.label else ""
            out.append(f"  {mark:<7} {hit.where[:40]}{label}: {hit.before} -> {hit.after}")
            out.append(f"          {hit.line.strip()[:140]}")
    out.append(f"healthy log lines it matches: {len(report.healthy)}")
    out += [f"  {h.where}: {h.line.strip()[:140]}" for h in report.healthy[:10]]
    refusals = report.refusals()
    out.append(
        "promote would refuse it: " + "; ".join(refusals) if refusals else "the back-test is clean"
    )
    return "\n".join(out) + "\n"


@curate_app.command("promote")
def curate_promote(
    draft: Annotated[Path, typer.Argument(help="the draft signature's YAML file")],
    store: StoreOption = None,
    overlay: OverlayOption = None,
    evals: EvalsOption = None,
    healthy: HealthyOption = None,
    backend: BackendChoice = "auto",
    by: Annotated[str | None, typer.Option(help="who promotes (recorded in the overlay)")] = None,
) -> None:
    """Write the draft into the overlay (a new overlay version) unless it breaks rules lint,
    fires on healthy logs or changes a confirmed diagnosis; then re-diagnose the queued
    incidents it covers. Exits 1 with the reasons when it refuses."""
    from denpex.curation.errors import PromotionRefused
    from denpex.curation.promote import promote, read_draft

    settings = _curation(store, overlay, evals, healthy, backend)
    opened = _open(store)
    try:
        signature, text = read_draft(draft)
        promotion = promote(signature, text, opened, settings, by=by)
    except PromotionRefused as refusal:
        sys.stderr.write(f"denpex: {refusal.signature_id} not promoted:\n")
        for reason in refusal.reasons:
            sys.stderr.write(f"  - {reason}\n")
        raise typer.Exit(1) from None
    except DenpexError as error:
        raise _fail(str(error)) from None
    sys.stdout.write(
        f"{promotion.signature_id} promoted: overlay version {promotion.version}, "
        f"{promotion.path}\n"
    )
    for settled in promotion.settled:
        outcome = "resolved" if settled.resolved else "still queued"
        sys.stdout.write(
            f"  incident {settled.incident_id[:12]}: {settled.before} -> {settled.after} "
            f"({outcome})\n"
        )


@curate_app.command("backfill")
def curate_backfill(
    store: StoreOption = None,
    overlay: OverlayOption = None,
    root: Annotated[
        list[Path] | None,
        typer.Option(
            "--root",
            help="a folder of past jobs (`denpex run` bundles with their diagnosis.json) to "
            "diagnose again too",
        ),
    ] = None,
    no_incidents: Annotated[
        bool, typer.Option("--no-incidents", help="only the --root folders, not the store")
    ] = False,
    backend: BackendChoice = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="the backfill as JSON")] = False,
    workers: JobWorkers = 1,
    broker: JobBroker = None,
    queue: JobQueue = "denpex",
    parts: JobParts = 8,
) -> None:
    """Diagnose every stored incident (and every past job under --root) again with the library
    as it stands (packaged + overlay) and say what changed; the store is left as it is. Each
    incident or job is a part: --workers N, or --broker for a Celery job."""
    from denpex.curation.backfill import backfill_parts
    from denpex.distributed.batch import report_of

    settings = _curation(store, overlay, backend=backend)
    opened = None if no_incidents else _open(store)
    try:
        found = backfill_parts(opened, root or [])
        document = _run_job(
            "backfill",
            found,
            {"settings": settings.as_json(), "use_store": opened is not None},
            workers=workers,
            broker=broker,
            queue=queue,
            tasks=parts,
        )
    except DenpexError as error:
        raise _fail(str(error)) from None
    if as_json:
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
        return
    report = report_of("backfill", document)
    for change in report.changes:
        mark = "changed" if change.changed else "same"
        after = change.after if change.after is not None else f"not diagnosed: {change.problem}"
        sys.stdout.write(
            f"{mark:<8}{change.kind:<9}{change.where[:60]}: {change.before} -> {after}\n"
        )
    sys.stdout.write(
        f"{len(report.changed)} of {len(report.changes)} answered differently by {report.library}\n"
    )


@hybrid_app.command("eval-learning")
def eval_learning(
    heldout: Annotated[Path, typer.Argument(help="the held-out set, with its rounds (README)")],
    corpus: Annotated[Path, typer.Option(help="the labelled corpus")] = Path("evals/corpus"),
    healthy: Annotated[
        list[Path] | None, typer.Option(help="logs of healthy runs (default: evals/healthy)")
    ] = None,
    backend: BackendChoice = "re",
    as_json: Annotated[bool, typer.Option("--json", help="the curve as JSON")] = False,
) -> None:
    """The learning curve: replay the held-out rounds in order, curating each round's misses
    (confirm with the label, propose, promote when the back-test is clean), and score each
    round blind with and without the curation of the rounds before it."""
    from denpex.evaluation.learning import learning_curve

    chosen = tuple(healthy) if healthy is not None else (Path("evals/healthy"),)
    with tempfile.TemporaryDirectory(prefix="denpex-learning-") as workdir:
        try:
            curve = learning_curve(
                heldout,
                corpus,
                chosen,
                Path(workdir),
                backend=backend,
                cache_dir=Settings().cache_folder,
                progress=None if as_json else lambda line: sys.stderr.write(line + "\n"),
            )
        except DenpexError as error:
            raise _fail(str(error)) from None
    if as_json:
        sys.stdout.write(json.dumps(curve.as_dict(), indent=2) + "\n")
        return
    sys.stdout.write(curve.text())
