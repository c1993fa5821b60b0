"""`denpex run -- CMD`: the command's output and exit code pass through; failures are diagnosed."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import REPO

FAILING = "import sys; print('step 0 loss 2.31', flush=True); raise ValueError('lr must be > 0')"
TRAPS_SIGTERM = (
    "import signal, sys, time\n"
    "def stop(*_):\n"
    "    print('worker: caught SIGTERM, checkpointing', flush=True); sys.exit(143)\n"
    "signal.signal(signal.SIGTERM, stop)\n"
    "print('worker: ready', flush=True)\n"
    "time.sleep(60)\n"
)


def denpex_run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "denpex", "run", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )


def test_a_failing_command_keeps_its_exit_code_and_is_diagnosed(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    result = denpex_run("--bundle", str(bundle), "--", sys.executable, "-c", FAILING)
    assert result.returncode == 1
    assert result.stdout == "step 0 loss 2.31\n"  # the command's stdout, untouched
    assert "ValueError: lr must be > 0" in result.stderr
    assert "python_exception" in result.stderr
    diagnosis = json.loads((bundle / "diagnosis.json").read_text())
    assert diagnosis["root_causes"][0]["evidence"][0]["text"] == "ValueError: lr must be > 0"
    record = json.loads((bundle / "command.json").read_text())
    assert record["exit_code"] == 1 and record["command"][-1] == FAILING


def test_a_succeeding_command_exits_0_and_leaves_nothing_behind() -> None:
    result = denpex_run("--", sys.executable, "-c", "print('done')")
    assert result.returncode == 0
    assert result.stdout == "done\n"
    assert result.stderr == ""


def test_sigterm_reaches_the_command_as_a_scheduler_would_send_it(tmp_path: Path) -> None:
    wrapper = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "denpex",
            "run",
            "--bundle",
            str(tmp_path / "b"),
            "--",
            sys.executable,
            "-c",
            TRAPS_SIGTERM,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    assert wrapper.stdout is not None
    assert wrapper.stdout.readline() == "worker: ready\n"
    wrapper.send_signal(signal.SIGTERM)
    started = time.monotonic()
    out, _ = wrapper.communicate(timeout=60)
    assert time.monotonic() - started < 30
    assert "caught SIGTERM" in out
    assert wrapper.returncode == 143


def test_a_missing_command_exits_127_with_one_line() -> None:
    result = denpex_run("--", "/nonexistent/train")
    assert result.returncode == 127
    assert result.stderr.strip().count("\n") == 0


def test_the_bundle_holds_host_telemetry_and_flight_recorder_settings(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    show = "import os; print(os.environ.get('TORCH_FR_DUMP_TEMP_FILE')); raise SystemExit(3)"
    result = denpex_run("--bundle", str(bundle), "--", sys.executable, "-c", show)
    assert result.returncode == 3
    assert result.stdout.strip() == str(bundle / "fr" / "fr_trace_rank_")
    host = json.loads((bundle / "host.json").read_text())
    assert host["tools"]["nvidia-smi"]["status"] in ("ok", "missing", "failed")
    assert "TORCH_NCCL_DUMP_ON_TIMEOUT" in host["flight_recorder"]["set_by_denpex"]
    samples = (bundle / "telemetry.jsonl").read_text().splitlines()
    assert samples and "meminfo" in json.loads(samples[0])


def test_run_command_closes_the_commands_pipes(tmp_path: Path) -> None:
    """Called in-process (the API's and the tests' way), it leaves no pipe open behind it:
    an unclosed one is a ResourceWarning, an error under this suite's warning filter."""
    import gc
    import os

    from denpex.run import run_command

    with Path(os.devnull).open("wb") as quiet:
        result = run_command(
            [sys.executable, "-c", "print('step 1')"],
            tmp_path / "bundle",
            stdout=quiet,
            stderr=quiet,
            telemetry_interval=None,
        )
    gc.collect()
    assert result.exit_code == 0
    assert (tmp_path / "bundle" / "stdout.log").read_text() == "step 1\n"
