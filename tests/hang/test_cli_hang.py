"""`denpex hang`: formats, the published schema, exit codes, and one clear line for bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources

import jsonschema
import pytest

from denpex.schemas import hang_schema
from tests.conftest import REPO
from tests.hang.conftest import case_dir
from tests.test_cli import denpex

WITHHELD = case_dir("withheld_one")


def _published() -> dict:
    text = resources.files("denpex.schemas").joinpath("hang.schema.json").read_text()
    return json.loads(text)


def test_the_hang_schema_file_equals_the_generated_schema() -> None:
    assert _published() == hang_schema(), "regenerate engine/schemas/hang.schema.json"


def test_json_output_validates_against_the_published_schema_and_names_the_culprit() -> None:
    result = denpex(
        "hang",
        str(WITHHELD / "dumps"),
        str(WITHHELD / "logs"),
        "--format",
        "json",
        "--scheduler",
        "slurm",
        "--capture-times",
        str(WITHHELD / "capture_times.json"),
    )
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    jsonschema.validate(document, _published())
    top = document["candidates"][0]
    assert (top["kind"], top["ranks"], top["process_group"], top["seq"]) == (
        "never_entered",
        [2],
        "0",
        6,
    )
    assert {"kind", "ranks", "hosts", "process_group", "seq", "confidence", "evidence"} <= set(top)
    assert document["isolation_plan"] is None and document["withheld_reason"]


def test_text_output_leads_with_the_verdict() -> None:
    result = denpex("hang", str(WITHHELD / "dumps"))
    assert result.returncode == 0, result.stderr
    text = result.stdout.decode()
    assert text.startswith("hang triage: hang_found")
    assert "1. never_entered: rank(s) 2" in text
    assert "isolation plan: withheld" in text


def test_a_healthy_run_exits_0_with_no_hang_evidence() -> None:
    result = denpex("hang", str(case_dir("healthy") / "dumps"), "-f", "json")
    assert result.returncode == 0
    assert json.loads(result.stdout)["status"] == "no_hang_evidence"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty file"),
        (b"\x80\x02}q\x00(X\x07\x00\x00\x00version", "truncated pickle"),
        (b'{"version": "2.10", "entries": "lots"}', "'entries' is str, not a list"),
    ],
)
def test_input_with_no_usable_dump_exits_2_with_one_line_naming_the_file(
    tmp_path, content: bytes, message: str
) -> None:
    bad = tmp_path / "fr_dump_0"
    bad.write_bytes(content)
    result = denpex("hang", str(bad))
    assert result.returncode == 2
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("denpex: no usable Flight Recorder dump")
    assert "fr_dump_0" in lines[0] and message in lines[0]
    assert result.stdout == b""


def test_json_that_is_not_a_dump_is_named_as_such(tmp_path) -> None:
    other = tmp_path / "metrics.json"
    other.write_text('{"step": 12, "loss": 0.5}')
    result = denpex("hang", str(other))
    assert result.returncode == 2
    assert "metrics.json: json that is not a Flight Recorder dump" in result.stderr.decode()


def test_a_bad_dump_among_good_ones_is_a_warning_and_its_rank_is_silent(tmp_path) -> None:
    for dump in (WITHHELD / "dumps").iterdir():
        (tmp_path / dump.name).write_bytes(dump.read_bytes())
    (tmp_path / "fr_dump_3").write_bytes((WITHHELD / "dumps" / "fr_dump_3").read_bytes()[:700])
    result = denpex("hang", str(tmp_path), "-f", "json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert any("fr_dump_3: truncated pickle" in w for w in document["warnings"])
    assert 3 in document["missing_ranks"]


def test_a_missing_path_and_a_bad_option_exit_2(tmp_path) -> None:
    assert denpex("hang", str(tmp_path / "nope")).returncode == 2
    wrong = denpex("hang", str(WITHHELD / "dumps"), "--scheduler", "pbs")
    assert wrong.returncode == 2
    assert b"--scheduler must be slurm or kubernetes" in wrong.stderr


def test_a_malformed_rank_hosts_file_exits_2_naming_the_line(tmp_path) -> None:
    mapping = tmp_path / "ranks.txt"
    mapping.write_text("0 node01\nthree node02\n")
    result = denpex("hang", str(WITHHELD / "dumps"), "--rank-hosts", str(mapping))
    assert result.returncode == 2
    assert b"ranks.txt:2: expected 'RANK HOST [GPU]'" in result.stderr


def test_hang_triage_reads_dumps_without_importing_torch() -> None:
    probe = (
        "import sys\n"
        "from denpex.cli import app\n"
        "try:\n"
        f"    app(['hang', {str(WITHHELD / 'dumps')!r}, '--format', 'json'])\n"
        "except SystemExit as done:\n"
        "    assert not done.code, done.code\n"
        "print('TORCH', 'torch' in sys.modules, file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, cwd=REPO, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr.decode()
    assert "TORCH False" in result.stderr.decode()
