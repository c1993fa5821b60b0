"""`denpex run -- CMD`: run a training command, keep its output and exit code, diagnose failures.

Consumes a command line and options; produces a bundle directory (the command's stdout and
stderr as it printed them, `command.json` with what ran, where and how it ended, and on failure
`diagnosis.json`) and the command's own exit status. Output is passed through unchanged while it
is recorded. SIGINT, SIGTERM and SIGUSR1/2 (what Slurm sends before a time limit or on
preemption) are forwarded to the command, so the wrapper never changes how a job ends.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from denpex.telemetry import Sampler, flight_recorder_environment, scheduler_identifiers

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2, signal.SIGHUP)


@dataclass(frozen=True)
class RunResult:
    exit_code: int
    bundle: Path
    signalled: int | None


def _tee(source: BinaryIO, sinks: list[BinaryIO]) -> None:
    for block in iter(lambda: source.read1(65536), b""):  # type: ignore[attr-defined]
        for sink in sinks:
            sink.write(block)
            sink.flush()


def _exit_code(returncode: int) -> tuple[int, int | None]:
    """The shell's convention: a child killed by signal N exits 128 + N."""
    if returncode < 0:
        return 128 - returncode, -returncode
    return returncode, None


def run_command(
    command: list[str],
    bundle: Path,
    *,
    stdout: BinaryIO | None = None,
    stderr: BinaryIO | None = None,
    on_started: Callable[[int], None] | None = None,
    telemetry_interval: float | None = 10.0,
) -> RunResult:
    """Run `command`, recording its output into `bundle`; forwards signals while it runs.

    With a `telemetry_interval`, the host is sampled while it runs (`denpex.telemetry`) and the
    child gets Flight Recorder dumps on timeout unless the user configured them."""
    bundle.mkdir(parents=True, exist_ok=True)
    environment, added, kept = flight_recorder_environment(os.environ, bundle)
    sampler = Sampler(bundle, telemetry_interval) if telemetry_interval else None
    if sampler is None:
        environment, added, kept = dict(os.environ), {}, {}
    else:
        sampler.start()
    stdout = stdout or sys.stdout.buffer
    stderr = stderr or sys.stderr.buffer
    started = datetime.now(UTC)
    with (
        (bundle / "stdout.log").open("wb") as out_log,
        (bundle / "stderr.log").open("wb") as err_log,
    ):
        try:
            child = subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment
            )
        except OSError as error:
            if sampler is not None:
                sampler.stop()
            raise FileNotFoundError(f"cannot run {command[0]!r}: {error.strerror}") from None
        previous = {
            number: signal.signal(number, lambda received, _frame: child.send_signal(received))
            for number in FORWARDED
        }
        if on_started is not None:
            on_started(child.pid)
        copiers = [
            threading.Thread(target=_tee, args=(child.stdout, [stdout, out_log]), daemon=True),
            threading.Thread(target=_tee, args=(child.stderr, [stderr, err_log]), daemon=True),
        ]
        for copier in copiers:
            copier.start()
        try:
            returncode = child.wait()
            for copier in copiers:
                copier.join()
        finally:
            for pipe in (child.stdout, child.stderr):
                if pipe is not None:
                    pipe.close()
            for number, handler in previous.items():
                signal.signal(number, handler)
    exit_code, signalled = _exit_code(returncode)
    if sampler is not None:
        sampler.stop()
        sampler.finish(os.environ, {"set_by_denpex": added, "kept_from_user": kept})
    record = {
        "command": command,
        "host": socket.gethostname(),
        "started": started.isoformat(),
        "ended": datetime.now(UTC).isoformat(),
        "exit_code": exit_code,
        "signal": signal.Signals(signalled).name if signalled else None,
        "environment": scheduler_identifiers(os.environ),
    }
    (bundle / "command.json").write_text(json.dumps(record, indent=2) + "\n")
    return RunResult(exit_code=exit_code, bundle=bundle, signalled=signalled)


def default_bundle(base: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    return base / f"denpex-run-{stamp}-{os.getpid()}"
