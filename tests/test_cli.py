"""The command line: formats, stdin, exit codes, and one clear line for unusable input."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

from tests.conftest import BAD_SAMPLE, REPO


def denpex(
    *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    import os

    return subprocess.run(
        [sys.executable, "-m", "denpex", *args],
        input=stdin,
        capture_output=True,
        cwd=REPO,
        timeout=120,
        check=False,
        env={**os.environ, **(env or {})},
    )


def test_json_output_follows_the_contract() -> None:
    result = denpex("diagnose", str(BAD_SAMPLE), "--format", "json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["schema_version"] == "1"
    assert document["status"] == "confident"
    assert document["root_causes"][0]["originating_rank"] == 3


def test_text_and_markdown_name_the_cause_and_the_next_step() -> None:
    text = denpex("diagnose", str(BAD_SAMPLE)).stdout.decode()
    markdown = denpex("diagnose", str(BAD_SAMPLE), "-f", "markdown").stdout.decode()
    for output in (text, markdown):
        assert "IndexError" in output
        assert "rank 3" in output
    assert markdown.startswith("# denpex: confident")


def test_a_tar_gz_on_stdin_is_diagnosed(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle.tar.gz"
    with tarfile.open(bundle, "w:gz") as archive:
        archive.add(BAD_SAMPLE, arcname="job")
    result = denpex("diagnose", "-", "-f", "json", stdin=bundle.read_bytes())
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["root_causes"][0]["originating_rank"] == 3


def test_a_missing_path_exits_2_with_one_line_and_no_traceback() -> None:
    result = denpex("diagnose", "/nonexistent/run")
    assert result.returncode == 2
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and "no such file" in lines[0]
    assert b"Traceback" not in result.stderr


def test_binary_garbage_alone_exits_2_with_one_line(tmp_path: Path) -> None:
    # Nothing in it was read: "no failure" would claim a log was.
    garbage = tmp_path / "core.bin"
    garbage.write_bytes(bytes(range(256)) * 4096)
    result = denpex("diagnose", str(garbage), "-f", "json")
    assert result.returncode == 2
    assert result.stdout == b""
    (line,) = result.stderr.decode().splitlines()
    assert "nothing to diagnose" in line and "binary" in line


def test_an_empty_directory_exits_2(tmp_path: Path) -> None:
    result = denpex("diagnose", str(tmp_path))
    assert result.returncode == 2
    assert "nothing to diagnose" in result.stderr.decode()


def test_schema_command_prints_the_published_schema() -> None:
    result = denpex("schema")
    assert result.returncode == 0
    assert json.loads(result.stdout)["title"] == "Diagnosis"


def test_usage_errors_are_one_line_and_exit_2() -> None:
    for args in (("diagnose", "--threshold", "5", "x"), ("diagnose", "--nope", "x"), ("nope",)):
        result = denpex(*args)
        assert result.returncode == 2, args
        lines = result.stderr.decode().strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("denpex: "), lines


def test_version_names_the_package_and_the_rules() -> None:
    result = denpex("--version")
    assert result.returncode == 0
    version = (REPO / "rules" / "VERSION").read_text().strip()
    assert result.stdout.decode().strip() == f"denpex 0.1.0 (rules {version})"


def test_fail_on_found_gives_ci_an_exit_code(tmp_path: Path) -> None:
    assert denpex("diagnose", str(BAD_SAMPLE), "--fail-on", "found").returncode == 1
    healthy = REPO / "evals" / "corpus" / "inject-clean"
    assert denpex("diagnose", str(healthy), "--fail-on", "found").returncode == 0
    assert denpex("diagnose", str(BAD_SAMPLE)).returncode == 0


def _on_a_terminal(columns: int, *args: str) -> str:
    """`denpex` with its stdout on a pseudo-terminal `columns` wide; what it printed there."""
    import fcntl
    import os
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    environment = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR")}
    process = subprocess.Popen(
        [sys.executable, "-m", "denpex", *args],
        stdout=follower,
        stderr=subprocess.DEVNULL,
        cwd=REPO,
        env=environment,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closes when the process ends
            break
        if not chunk:
            break
        chunks.append(chunk)
    process.wait(timeout=120)
    os.close(leader)
    return b"".join(chunks).decode().replace("\r\n", "\n")


def test_on_a_terminal_text_fits_its_width_in_colour_and_a_pipe_gets_plain_text() -> None:
    import re

    ansi = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
    shown = _on_a_terminal(72, "diagnose", str(BAD_SAMPLE))
    assert ansi.search(shown), "colour on a terminal"
    lines = [ansi.sub("", line) for line in shown.splitlines()]
    assert "data_preprocessing_error" in "".join(lines)
    assert max(len(line) for line in lines) <= 72
    piped = denpex("diagnose", str(BAD_SAMPLE)).stdout.decode()
    assert not ansi.search(piped), "no colour in a pipe"


def test_a_setting_with_an_invalid_value_is_one_line_naming_its_variable() -> None:
    for name, value, said in (
        ("DENPEX_LLM_TIMEOUT", "soon", "DENPEX_LLM_TIMEOUT='soon': Input should be a valid number"),
        ("DENPEX_MAX_MEMBERS", "0", "DENPEX_MAX_MEMBERS='0': Input should be greater than 0"),
    ):
        result = denpex("diagnose", str(BAD_SAMPLE), "--store", "off", env={name: value})
        assert result.returncode == 2, name
        lines = result.stderr.decode().strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"denpex: {said}"), lines


def test_the_unpacked_bytes_cap_is_a_setting_the_command_line_obeys(tmp_path: Path) -> None:
    import gzip

    bomb = tmp_path / "rank0.log.gz"
    bomb.write_bytes(gzip.compress(b"step 1 ok\n" * (200 * 1024)))  # 2 MB unpacked
    assert denpex("diagnose", str(bomb), "--store", "off").returncode == 0
    capped = denpex(
        "diagnose", str(bomb), "--store", "off", env={"DENPEX_MAX_UNPACKED_BYTES": "1048576"}
    )
    assert capped.returncode == 2
    lines = capped.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and "(the max_unpacked_bytes limit)" in lines[0], lines
