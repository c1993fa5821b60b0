"""`denpex curate` on a recorded store: the grouped queue, reject, and one-line mistakes."""

from __future__ import annotations

from typer.testing import CliRunner

from denpex.cli import app
from tests.curation.conftest import Recorded

runner = CliRunner()


def test_the_grouped_queue_and_a_rejection_from_the_command_line(recorded: Recorded) -> None:
    store = ["--store", recorded.store.url.removeprefix("sqlite:///")]
    listed = runner.invoke(app, ["curate", "list", "--grouped", *store])
    assert listed.exit_code == 0, listed.output
    assert listed.stdout.startswith("group 1: 2 incident(s)")
    assert "similar: " in listed.stdout and "process_killed" in listed.stdout
    twin = recorded.ids["monkeyocr-86.log"]
    rejected = runner.invoke(app, ["curate", "reject", twin[:12], *store, "--note", "dup"])
    assert rejected.stdout == f"incident {twin[:12]} rejected\n"
    assert twin[:12] in runner.invoke(app, ["curate", "list", "--state", "rejected", *store]).stdout


def test_curation_without_an_overlay_is_one_line_and_exit_2(recorded: Recorded) -> None:
    store = ["--store", recorded.store.url.removeprefix("sqlite:///")]
    incident = recorded.ids["lmdeploy-3992.log"]
    result = runner.invoke(app, ["curate", "propose", incident, *store], env={"DENPEX_OVERLAY": ""})
    assert result.exit_code == 2
    assert result.output.startswith("denpex: no overlay folder is configured")
