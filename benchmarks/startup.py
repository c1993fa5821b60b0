"""Start-up to answer: `denpex diagnose` of a small job against the interpreter's own start-up.

Usage (from the repository root):

    .venv/bin/python benchmarks/startup.py --repeat 10

Times fresh processes as CPU seconds (user + system, so that other jobs on the shared machine
move the figures less), best of `--repeat`, with the caches warm (a warm-up run first, as a
user's second diagnosis finds them):
- `python -c pass` (the reference);
- `python -c "import denpex.cli"` (importing the command line, nothing run);
- `denpex diagnose examples/torchrun-bad-sample --store off -f json` (four ranks' logs, 13 KB:
  start-up, loading the compiled library, the scan, the reasoning and the JSON out);
- the same with the default store (a SQLite file in a temporary data folder).
`-X importtime` of the `--store off` run is summed per top-level package and printed with
`--imports`, to show what the start-up spends its time importing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "torchrun-bad-sample"


def cpu_seconds(command: list[str], env: dict[str, str]) -> tuple[float, subprocess.Popen]:
    """CPU seconds (user + system) of one fresh process, and the finished process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr[-2000:]}")
    used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return used, done  # type: ignore[return-value]


def best(repeat: int, command: list[str], env: dict[str, str]) -> tuple[float, str]:
    runs = [cpu_seconds(command, env) for _ in range(repeat)]
    return min(seconds for seconds, _ in runs), runs[-1][1].stdout  # type: ignore[attr-defined]


def import_times(command: list[str], env: dict[str, str]) -> Counter[str]:
    """Import microseconds per top-level package (each module's own time, summed), from
    `-X importtime`."""
    done = subprocess.run(
        [command[0], "-X", "importtime", *command[1:]],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    totals: Counter[str] = Counter()
    for line in done.stderr.splitlines():
        found = re.match(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)", line)
        if found:
            totals[found.group(2).split(".")[0]] += int(found.group(1))
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--imports", action="store_true", help="print import time per package")
    arguments = parser.parse_args()

    python = sys.executable
    diagnose = [python, "-m", "denpex", "diagnose", str(EXAMPLE), "-f", "json", "--no-progress"]
    with tempfile.TemporaryDirectory(prefix="denpex-startup-") as data:
        env = {**os.environ, "DENPEX_DATA_DIR": data}
        env.pop("DENPEX_STORE", None)
        cpu_seconds([*diagnose, "--store", "off"], env)  # warm-up: compiled library cache
        cpu_seconds(diagnose, env)  # warm-up: the store and its seed history
        interpreter, _ = best(arguments.repeat, [python, "-c", "pass"], env)
        imports, _ = best(arguments.repeat, [python, "-c", "import denpex.cli"], env)
        off, off_out = best(arguments.repeat, [*diagnose, "--store", "off"], env)
        on, on_out = best(arguments.repeat, diagnose, env)
        packages = import_times([*diagnose, "--store", "off"], env) if arguments.imports else None
    answer = json.loads(off_out)
    assert answer["status"] == "confident", answer["status"]
    cause = answer["root_causes"][0]["failure_class"]
    assert json.loads(on_out)["root_causes"][0]["failure_class"] == cause, "the store changed it"
    figures = {
        "load_average": round(os.getloadavg()[0], 2),
        "python_c_pass_cpu_s": round(interpreter, 3),
        "import_denpex_cli_cpu_s": round(imports, 3),
        "diagnose_store_off_cpu_s": round(off, 3),
        "diagnose_store_on_cpu_s": round(on, 3),
        "import_over_python": round(imports / interpreter, 1),
        "store_off_over_python": round(off / interpreter, 1),
        "store_on_over_off": round(on / off, 2),
        "cause": f"{answer['root_causes'][0]['failure_class']} rank "
        f"{answer['root_causes'][0]['originating_rank']}",
    }
    print(json.dumps(figures, indent=2))
    if packages:
        print("import time by top-level package (ms, -X importtime, one run):")
        for name, micros in packages.most_common(15):
            print(f"  {name:<24} {micros / 1000:7.1f}")


if __name__ == "__main__":
    main()
