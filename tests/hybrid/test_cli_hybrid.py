"""The command line of the hybrid path: diagnose with a store, curate, and the evaluations."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from denpex.cli import app
from tests.conftest import BAD_SAMPLE, REPO
from tests.hybrid.support import CORPUS, copy_cases

runner = CliRunner()


def run(*args: str, env: dict[str, str] | None = None):
    result = runner.invoke(app, list(args), env=env)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def test_a_confirmed_cause_answers_the_next_similar_failure(tmp_path: Path, embedder) -> None:
    store = str(tmp_path / "incidents.db")
    strict = ["--threshold", "0.99", "--store", store, "-f", "json"]
    first = json.loads(run("diagnose", str(CORPUS / "killed-rank0"), *strict).stdout)
    # No past incident yet: the rules' candidates and the lines' words are all there is.
    assert first["status"] in ("unknown", "best_effort")
    assert all(cause["source"] != "retrieval" for cause in first["root_causes"])
    queued = first["curation_id"]
    listed = run("curate", "list", "--store", store).stdout
    assert listed.startswith(queued[:12]) and "queued" in listed

    confirmed = run(
        "curate",
        "confirm",
        queued[:10],
        "--class",
        "process_killed",
        "--store",
        store,
        "--by",
        "oncall",
        "--note",
        "SIGKILL from outside, no OOM record",
    )
    assert confirmed.exit_code == 0
    assert f"incident {queued[:12]} confirmed as process_killed" in confirmed.stdout

    second = json.loads(run("diagnose", str(CORPUS / "killed-rank1"), *strict).stdout)
    top = second["root_causes"][0]
    assert second["status"] == "best_effort"
    # The rules' own (unconfident) candidate and the confirmed incident agree.
    assert (top["failure_class"], top["best_effort"]) == ("process_killed", True)
    assert "retrieval" in second["summary"]
    assert f"denpex curate show {queued[:12]}" in top["next_steps"][0]
    assert Path(store + ".faiss").is_file()

    shown = run("curate", "show", queued[:12], "--store", store).stdout
    assert "confirmed process_killed by oncall" in shown
    assert "Signal 9 (SIGKILL) received by PID" in shown
    record = json.loads(run("curate", "show", queued, "--store", store, "--json").stdout)
    assert record["confirmed_note"] == "SIGKILL from outside, no OOM record"
    assert all(len(i["sha256"]) == 64 for i in record["inputs"])


def test_curation_mistakes_are_one_line_and_exit_2(tmp_path: Path) -> None:
    store = str(tmp_path / "incidents.db")
    missing = run("curate", "confirm", "deadbeef", "--class", "host_oom", "--store", store)
    assert missing.exit_code == 2
    assert "no incident 'deadbeef'" in missing.output
    bad_state = run("curate", "list", "--store", store, "--state", "lost")
    assert bad_state.exit_code == 2 and "unknown curation state" in bad_state.output
    nowhere = run("curate", "list", env={"DENPEX_STORE": "off"})
    assert nowhere.exit_code == 2 and "turned off" in nowhere.output


def test_the_store_can_come_from_the_environment(tmp_path: Path) -> None:
    store = str(tmp_path / "from-env.db")
    result = run("diagnose", str(BAD_SAMPLE), "-f", "json", env={"DENPEX_STORE": store})
    assert json.loads(result.stdout)["status"] == "confident"
    assert "not_queued" in run("curate", "list", "--state", "all", "--store", store).stdout


def test_without_a_store_named_the_incident_store_is_a_file_in_the_data_folder(
    tmp_path: Path,
) -> None:
    environment = {"DENPEX_STORE": "", "DENPEX_DATA_DIR": str(tmp_path)}
    result = run("diagnose", str(BAD_SAMPLE), "-f", "json", env=environment)
    assert json.loads(result.stdout)["status"] == "confident"
    assert (tmp_path / "incidents.sqlite").is_file()
    assert "not_queued" in run("curate", "list", "--state", "all", env=environment).stdout


def test_a_store_turned_off_writes_nothing(tmp_path: Path) -> None:
    environment = {"DENPEX_STORE": "off", "DENPEX_DATA_DIR": str(tmp_path)}
    result = run("diagnose", str(BAD_SAMPLE), "-f", "json", env=environment)
    assert json.loads(result.stdout)["status"] == "confident"
    assert list(tmp_path.iterdir()) == []
    assert (
        run("diagnose", str(BAD_SAMPLE), "--store", "off", env={"DENPEX_STORE": ""}).exit_code == 0
    )


def test_an_llm_with_the_store_turned_off_is_refused() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "denpex", "diagnose", str(BAD_SAMPLE), "--llm-model", "ollama/x"],
        capture_output=True,
        cwd=REPO,
        timeout=120,
        check=False,
        env={**os.environ, "DENPEX_STORE": "off"},
    )
    assert result.returncode == 2
    assert result.stderr.decode().strip().splitlines() == [
        "denpex: an LLM answer is queued for curation: it needs the incident store, which is "
        "turned off"
    ]


def test_recording_a_settled_case_loads_no_heavy_library(tmp_path: Path) -> None:
    heavy = ("torch", "litellm", "sentence_transformers", "faiss", "transformers")
    probe = (
        "import sys\n"
        "from denpex.cli import app\n"
        "try:\n"
        f"    app(['diagnose', {str(BAD_SAMPLE)!r}, '--store', {str(tmp_path / 's.db')!r}])\n"
        "except SystemExit as done:\n"
        "    assert not done.code, done.code\n"
        f"print('LOADED', sorted(m for m in {heavy!r} if m in sys.modules), file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, cwd=REPO, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr.decode()
    assert "LOADED []" in result.stderr.decode()
    assert (tmp_path / "s.db").is_file()


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_cases(
        ["ckpt-missing", "ckpt-size", "killed-rank0", "killed-rank1", "clean"],
        tmp_path_factory.mktemp("corpus"),
    )


def test_the_retrieval_evaluation_runs_on_a_case_directory(small_corpus: Path, embedder) -> None:
    text = run("hybrid", "eval-retrieval", str(small_corpus)).stdout
    assert "4 labelled case(s), 1 clean skipped: accuracy@1 1.000" in text
    document = json.loads(run("hybrid", "eval-retrieval", str(small_corpus), "--json").stdout)
    assert document["cases"] == 4 and document["hit_at_5"] == 1.0


def test_the_family_evaluation_runs_on_a_case_directory(tmp_path: Path, embedder) -> None:
    # The checkpoint cases alone: each family that settles a case costs a compile of the
    # library without it, and one family is enough to show the report.
    corpus = copy_cases(["ckpt-missing", "ckpt-size", "clean"], tmp_path)
    text = run("hybrid", "eval-family-out", str(corpus)).stdout
    # Which family settles which case depends on the library; some family settles the
    # checkpoint cases, and the report names it with its count.
    assert re.search(r"^\w+: [12] settled case\(s\); without it", text, re.M), text
    assert "all families:" in text


def test_an_evaluation_of_a_missing_corpus_is_one_line(tmp_path: Path) -> None:
    result = run("hybrid", "eval-retrieval", str(tmp_path / "nope"))
    assert result.exit_code == 2
    assert "not a directory of cases" in result.output


def test_a_store_that_cannot_be_reached_leaves_a_rules_diagnosis_and_exit_3() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "denpex",
            "diagnose",
            str(BAD_SAMPLE),
            "-f",
            "json",
            "--store",
            "postgresql://denpex@127.0.0.1:1/none?connect_timeout=2",
        ],
        capture_output=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    # The diagnosis is worth having; that it went unrecorded is said and is not exit 0.
    assert result.returncode == 3
    assert json.loads(result.stdout)["status"] == "confident"
    first, last = result.stderr.decode().strip().splitlines()
    assert first.startswith("denpex: cannot open store postgresql")
    assert first.endswith("diagnosing with the rules only")
    assert last.startswith("denpex: the diagnosis above was not recorded in the incident store")


def test_a_store_that_refuses_the_write_is_exit_3_with_the_diagnosis_shown(tmp_path: Path) -> None:
    import sqlite3

    from denpex.store.store import open_store

    database = tmp_path / "incidents.db"
    open_store(str(f"sqlite:///{database}")).close()
    with sqlite3.connect(database) as connection:  # the disk is full, as SQLite would say
        connection.execute(
            "CREATE TRIGGER full BEFORE INSERT ON incidents "
            "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
        )
    result = run("diagnose", str(BAD_SAMPLE), "-f", "json", "--store", str(database))
    assert result.exit_code == 3
    shown = json.loads(result.stdout[: result.stdout.rindex("}") + 1])
    assert shown["status"] == "confident"
    assert shown["curation_id"] is None
    assert any("not recorded" in warning for warning in shown["warnings"])
    assert "was not recorded in the incident store" in result.output
    assert "database or disk is full" in result.output


def test_the_text_report_says_where_the_incident_waits(tmp_path: Path) -> None:
    store = str(tmp_path / "incidents.db")
    text = run(
        "diagnose", str(CORPUS / "exc-keyerror"), "--threshold", "0.7", "--store", store
    ).stdout
    assert "queued for curation as " in text
    waiting = run("curate", "list", "--store", store).stdout.split()[0]
    assert f"denpex curate show {waiting}" in text


def test_with_the_store_turned_off_not_even_the_database_libraries_load() -> None:
    probe = (
        "import sys\n"
        "from denpex.cli import app\n"
        "try:\n"
        f"    app(['diagnose', {str(BAD_SAMPLE)!r}])\n"
        "except SystemExit as done:\n"
        "    assert not done.code, done.code\n"
        "print('LOADED', sorted(m for m in ('sqlalchemy', 'alembic') if m in sys.modules),"
        " file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        cwd=REPO,
        timeout=120,
        check=False,
        env={
            # Every denpex setting cleared but the session's compiled-library cache.
            **{k: v for k, v in os.environ.items() if not k.startswith("DENPEX_")},
            "DENPEX_CACHE_DIR": os.environ["DENPEX_CACHE_DIR"],
            "DENPEX_STORE": "off",
        },
    )
    assert result.returncode == 0, result.stderr.decode()
    assert "LOADED []" in result.stderr.decode()


def test_a_named_store_takes_the_seed_history_when_asked(tmp_path: Path) -> None:
    store = str(tmp_path / "team.db")
    from denpex.retrieval.seed import load_seed

    retrievable = sum(1 for item in load_seed() if item.templates)
    first = run("curate", "seed", "--store", store)
    assert first.exit_code == 0 and first.stdout.startswith(f"{retrievable} seed incident(s)")
    assert run("curate", "seed", "--store", store).stdout.startswith("0 seed incident(s)")


def test_the_default_store_answers_an_unsettled_failure_from_the_seed_history(
    tmp_path: Path,
) -> None:
    environment = {"DENPEX_STORE": "", "DENPEX_DATA_DIR": str(tmp_path)}
    result = run(
        "diagnose",
        str(CORPUS / "exc-keyerror"),
        "--threshold",
        "0.99",
        "-f",
        "json",
        env=environment,
    )
    diagnosis = json.loads(result.stdout)
    assert diagnosis["status"] == "best_effort"
    assert diagnosis["root_causes"][0]["best_effort"]
    assert diagnosis["curation_id"]
