"""Command-line pieces of the hybrid path: settings from the environment, `curate`, evaluations.

Settings are read at the edge (`cli_settings.py`): options given on the command line win over
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

if TYPE_CHECKING:
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
    from denpex.hybrid.cli_settings import HybridEnvironment, chosen_store
    from denpex.store.store import open_store, store_url

    chosen = chosen_store(store, HybridEnvironment())
    if chosen is None:
        raise _fail("the incident store is turned off (DENPEX_STORE=off): give --store")
    try:
        return open_store(store_url(chosen))
    except DenpexError as error:
        raise _fail(str(error)) from None


@curate_app.command("list")
def curate_list(
    store: StoreOption = None,
    state: Annotated[str, typer.Option(help="queued, confirmed, not_queued, or all")] = "queued",
    limit: Annotated[int, typer.Option(min=1, help="at most this many, newest first")] = 50,
) -> None:
    """Incidents waiting for a curator (or in another state), newest first."""
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
    from denpex.match.library import load_library
    from denpex.retrieval.evaluate import evaluate_retrieval

    with tempfile.TemporaryDirectory(prefix="denpex-eval-") as workdir:
        try:
            report = evaluate_retrieval(
                corpus, workdir=Path(workdir), library=load_library(), embedder=_embedder()
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
    from denpex.hybrid.family_out import evaluate_family_out
    from denpex.match.library import load_library

    with tempfile.TemporaryDirectory(prefix="denpex-eval-") as workdir:
        try:
            report = evaluate_family_out(
                corpus,
                workdir=Path(workdir),
                library=load_library(),
                embedder=_embedder(),
                families=family,
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
