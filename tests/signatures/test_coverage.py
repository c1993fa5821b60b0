"""`denpex rules coverage`: the catalogs' accounting, per emitter and release line."""

from __future__ import annotations

import json
from pathlib import Path

from denpex.signatures.coverage import read_coverage
from denpex.signatures.library import default_rules_dir
from tests.test_cli import denpex


def test_every_message_found_is_mapped_kept_as_context_or_excluded() -> None:
    emitters = read_coverage()
    assert {e.emitter for e in emitters} >= {"nccl", "nccl_tests"}
    for emitter in emitters:
        for row in [*emitter.releases, emitter.total]:
            assert row.found == row.mapped + row.context + row.excluded, (emitter.emitter, row)


def test_nccl_is_covered_on_the_release_lines_users_run() -> None:
    (nccl,) = [e for e in read_coverage() if e.emitter == "nccl"]
    lines = [row.line for row in nccl.releases]
    assert {"2.18", "2.21", "2.23", "2.26", "2.27", "master"} <= set(lines)
    for row in nccl.releases:
        assert row.signatures > 0 and row.found >= row.signatures


def test_every_exclusion_has_a_written_reason() -> None:
    for path in default_rules_dir().glob("*_cat/CATALOG.json"):
        for message in json.loads(path.read_text())["messages"]:
            if message["disposition"] != "mapped":
                assert message.get("reason"), (path.parent.name, message["text"])


def test_the_command_prints_a_row_per_release_line() -> None:
    result = denpex("rules", "coverage")
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode()
    assert "nccl_tests" in out and "v2.18.6-1" in out
    assert "generated signatures" in out


def test_a_damaged_accounting_file_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "x_cat").mkdir()
    (tmp_path / "VERSION").write_text("0.0.1\n")
    (tmp_path / "x_cat" / "CATALOG.json").write_text("{not json")
    result = denpex("rules", "coverage", "--rules", str(tmp_path))
    assert result.returncode == 2
    assert b"not a catalog accounting file" in result.stderr
