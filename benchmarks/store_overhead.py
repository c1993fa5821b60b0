"""What the default incident store costs a rules-settled diagnosis, and the cost of many files.

Usage (from the repository root):

    .venv/bin/python benchmarks/store_overhead.py                 # 64 ranks, 64 MiB
    .venv/bin/python benchmarks/store_overhead.py --size-mib 256 --repeat 5

Generates (once, cached) the multi-rank logs of `scan_throughput.py` (real line shapes ending in
an Xid 79 on one host and every other rank's watchdog timeout; at this size the rules settle
it as the collective timeout, at a threshold of 0.5 so that no best effort runs) and times,
in fresh processes and as CPU seconds (user + system) so that a busy shared machine moves the
figures less, best of `--repeat`:
- `denpex diagnose DIR --store off` (the rules alone, the reference);
- `denpex diagnose DIR` with the default store (a SQLite file in a temporary data folder, seeded
  by a warm-up run first, as a user's store is after its first diagnosis);
- `python -c pass` (the interpreter's own start-up, for scale).
Both diagnoses must name the same cause.

`--files N` also writes the same bytes as N files (one rank's log cut into N pieces per rank
group) and compares `--store off` on them against the same bytes in 64 files: cost should grow
with bytes, not with the number of files.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scan_throughput import generate


def cpu_seconds(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    """CPU seconds (user + system) of one fresh process, and its standard output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command[:4])} failed: {done.stderr[-2000:]}")
    used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return used, done.stdout


def best(repeat: int, command: list[str], env: dict[str, str]) -> tuple[float, str]:
    runs = [cpu_seconds(command, env) for _ in range(repeat)]
    return min(r[0] for r in runs), runs[-1][1]


THRESHOLD = "0.5"
"""The generated set's watchdog timeouts are settled by the rules at 0.56; at the default 0.6
the diagnosis would go to the best effort, which loads the embedder: that is not what is
measured here."""


def diagnose(paths: list[str], *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "denpex",
        "diagnose",
        *paths,
        "-f",
        "json",
        "--no-progress",
        "--threshold",
        THRESHOLD,
        *extra,
    ]


def split_into(source: Path, target: Path, files: int) -> None:
    """The same bytes as `files` files: each log cut at line ends into equal pieces, the pieces
    kept in the rank's host folder and named so that the rank is still stated."""
    logs = sorted(source.rglob("*.log"))
    pieces = max(1, files // len(logs))
    for log in logs:
        lines = log.read_bytes().splitlines(keepends=True)
        step = max(1, -(-len(lines) // pieces))
        folder = target / log.parent.name / log.stem
        folder.mkdir(parents=True, exist_ok=True)
        for index in range(0, len(lines), step):
            (folder / f"part{index // step:05d}.log").write_bytes(
                b"".join(lines[index : index + step])
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=float, default=64.0)
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--files", type=int, default=0, help="also time the bytes as N files")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/denpex-bench-store"))
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON")
    parser.add_argument(
        "--data-dir", type=Path, default=None, help="the store's data folder (default: a new one)"
    )
    parser.add_argument(
        "--no-warm-up",
        action="store_true",
        help="skip the warm-up runs (the caches are warm and --data-dir's store is seeded)",
    )
    arguments = parser.parse_args()

    logs = arguments.dir / "logs"
    generate(logs, arguments.size_mib / 1024, arguments.ranks, seed=7)
    paths = [str(logs)]
    with tempfile.TemporaryDirectory(prefix="denpex-store-bench-") as scratch:
        data = str(arguments.data_dir or scratch)
        env = {**os.environ, "DENPEX_DATA_DIR": data}
        env.pop("DENPEX_STORE", None)
        if not arguments.no_warm_up:
            cpu_seconds(diagnose(paths), env)  # warm-up: caches, seed history
            cpu_seconds(diagnose(paths, "--store", "off"), env)
        interpreter, _ = best(arguments.repeat, [sys.executable, "-c", "pass"], env)
        off, off_out = best(arguments.repeat, diagnose(paths, "--store", "off"), env)
        on, on_out = best(arguments.repeat, diagnose(paths), env)
    assert json.loads(off_out)["status"] == "confident", "not settled by the rules"
    off_cause = json.loads(off_out)["root_causes"][0]
    on_cause = json.loads(on_out)["root_causes"][0]
    assert (off_cause["failure_class"], off_cause["originating_rank"]) == (
        on_cause["failure_class"],
        on_cause["originating_rank"],
    ), "the store changed the answer"
    figures = {
        "size_mib": arguments.size_mib,
        "ranks": arguments.ranks,
        "python_c_pass_cpu_s": round(interpreter, 3),
        "store_off_cpu_s": round(off, 3),
        "store_on_cpu_s": round(on, 3),
        "store_on_over_off": round(on / off, 2),
        "store_off_over_python": round(off / interpreter, 1),
        "status": json.loads(off_out)["status"],
        "cause": f"{off_cause['failure_class']} rank {off_cause['originating_rank']}",
    }
    if arguments.files:
        many = arguments.dir / f"files-{arguments.files}"
        if not many.exists():
            split_into(logs, many, arguments.files)
        count = sum(1 for _ in many.rglob("*.log"))
        spread, _ = best(arguments.repeat, diagnose([str(many)], "--store", "off"), env)
        figures.update(
            {
                "files": count,
                "store_off_many_files_cpu_s": round(spread, 3),
                "many_files_over_64_files": round(spread / off, 2),
            }
        )
    print(json.dumps(figures, indent=2))
    if arguments.out:
        arguments.out.parent.mkdir(parents=True, exist_ok=True)
        arguments.out.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
