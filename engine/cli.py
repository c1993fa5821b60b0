"""The `denpex` command line.

Settings are read here, at the edge, and passed down as explicit options. Every deliberate
error becomes one line on stderr and exit code 2; a diagnosis of any status exits 0.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

from denpex import __version__
from denpex.errors import DenpexError
from denpex.models import Diagnosis
from denpex.pipeline import DiagnoseOptions, diagnose

app = typer.Typer(
    name="denpex",
    help="Explain why a distributed training or inference run failed.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
stderr = Console(stderr=True, highlight=False)


class OutputFormat(StrEnum):
    text = "text"
    json = "json"
    markdown = "markdown"


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


RulesOption = Annotated[
    Path | None, typer.Option("--rules", help="signature library directory (default: bundled)")
]
BackendOption = Annotated[
    str, typer.Option("--backend", help="matcher backend: auto, hyperscan or re")
]


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
        float, typer.Option(help="confidence at or above which the rules answer is confident")
    ] = 0.6,
    progress: Annotated[
        bool | None, typer.Option(help="progress bar on stderr (default: when it is a terminal)")
    ] = None,
) -> None:
    """Diagnose a failed run from its logs: ranked root causes with evidence and next steps."""
    from denpex.render import RENDERERS

    options = DiagnoseOptions(rules_dir=rules, backend=backend, confidence_threshold=threshold)
    show_progress = stderr.is_terminal if progress is None else progress
    try:
        with _progress(show_progress) as advance:
            diagnosis: Diagnosis = diagnose(
                paths, options, stdin=sys.stdin.buffer if "-" in paths else None, progress=advance
            )
    except DenpexError as error:
        fail(str(error))
    sys.stdout.write(RENDERERS[output_format.value](diagnosis))


class HangFormat(StrEnum):
    text = "text"
    json = "json"


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
) -> None:
    """Find the ranks behind a hang from every rank's Flight Recorder dump; never runs a plan."""
    from denpex.hang.command import HangRequest, hang_from_paths
    from denpex.hang.models import Scheduler
    from denpex.hang.render import to_json, to_text

    if scheduler is not None and scheduler not in {s.value for s in Scheduler}:
        fail(f"--scheduler must be slurm or kubernetes, not {scheduler!r}")
    request = HangRequest(
        paths=paths,
        scheduler=Scheduler(scheduler) if scheduler else None,
        world_size=world_size,
        rank_hosts_file=rank_hosts,
        capture_times_file=capture_times,
        capture_from_mtime=capture_from_mtime,
        rules_dir=rules,
        backend=backend,
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
    from denpex.match.library import load_library

    try:
        library = load_library()
    except DenpexError as error:
        fail(str(error))
    sys.stdout.write(f"denpex {__version__}, rules {library.label}\n")


rules_app = typer.Typer(help="Check and browse the signature library.", no_args_is_help=True)
app.add_typer(rules_app, name="rules")


@rules_app.command("lint")
def rules_lint_command(rules: RulesOption = None) -> None:
    """Schema, unique ids, taxonomy, both backends, pattern hygiene and every example."""
    from denpex.match.lint import lint

    problems = lint(rules)
    for problem in problems:
        sys.stdout.write(f"{problem}\n")
    if problems:
        fail(f"{len(problems)} problem(s) in the signature library", code=1)
    sys.stdout.write("signature library is clean\n")


@rules_app.command("test")
def rules_test_command(rules: RulesOption = None) -> None:
    """Run every signature's match and near-miss examples in every available backend."""
    from denpex.match.backends import available_backends
    from denpex.match.library import load_library
    from denpex.match.lint import example_problems

    try:
        library = load_library(rules)
    except DenpexError as error:
        fail(str(error))
    examples = sum(len(s.examples.match) + len(s.examples.no_match) for s in library.signatures)
    problems = []
    for backend in available_backends():
        problems += example_problems(library, backend)
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


@rules_app.command("list")
def rules_list_command(
    family: Annotated[str | None, typer.Option(help="only this family, e.g. xid")] = None,
    rules: RulesOption = None,
) -> None:
    """One line per signature: id, role, failure class, prior confidence, title."""
    from rich.table import Table

    from denpex.match.library import load_library

    try:
        library = load_library(rules)
    except DenpexError as error:
        fail(str(error))
    table = Table(title=f"signature library {library.label}", show_lines=False)
    for column in ("id", "role", "failure class", "prior", "title"):
        table.add_column(column)
    shown = [s for s in library.signatures if family is None or s.family == family]
    for signature in shown:
        table.add_row(
            signature.id,
            signature.role,
            signature.failure_class,
            f"{signature.confidence:.2f}",
            signature.title,
        )
    Console(highlight=False).print(table)
    if family is not None and not shown:
        fail(f"no signatures in family {family!r}")


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        stderr.print("denpex: interrupted")
        sys.exit(130)
