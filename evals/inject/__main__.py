"""Command line: regenerate the injected corpus, or part of it, or relabel collected cases.

    python -m evals.inject --out evals/corpus               # every scenario
    python -m evals.inject --out evals/corpus --scenario sigkill-rank --scenario clean
    python -m evals.inject --list
    python -m evals.inject --relabel evals/corpus/issue-*   # recompute loudest_error/misleading

Prints one line per scenario (written, skipped with the reason, rejected with the reason) and
the total time. Exits 1 when any scenario was rejected, 0 otherwise (skips are not failures, but
they are always printed).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path
from types import FrameType

from evals.inject import expected, isolation, labels
from evals.inject.harness import Status, run_scenario
from evals.inject.scenarios import BY_ID, SCENARIOS, choose

DEFAULT_SEED = 17


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m evals.inject", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--out", type=Path, default=Path("evals/corpus"))
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="base seed (default 17)")
    parser.add_argument("--scenario", action="append", choices=sorted(BY_ID), metavar="ID")
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    parser.add_argument("--relabel", nargs="+", type=Path, metavar="CASE_DIR")
    parser.add_argument(
        "--keep-rejected", type=Path, metavar="DIR", help="copy rejected runs here to debug them"
    )
    return parser.parse_args(argv)


def _list(seed: int) -> None:
    for scenario in SCENARIOS:
        resolved = choose(scenario, seed)
        shape = f"ws={resolved.world_size}"
        if scenario.expect_failure and scenario.rank_originates:
            shape += f" rank={resolved.fault_rank} step={resolved.fault_step}"
        label = scenario.failure_class or "no failure"
        needs = f" needs {','.join(scenario.needs)}" if scenario.needs else ""
        print(f"{scenario.id:32} {label:24} {scenario.launcher:22} {shape}{needs}")


def relabel(case_dir: Path) -> dict[str, object]:
    """Recompute loudest_error and misleading of a case from its text files, in place."""
    path = case_dir / "expected.json"
    document = json.loads(path.read_text())
    texts = {
        file.relative_to(case_dir).as_posix(): file.read_bytes().decode("utf-8", "surrogateescape")
        for file in sorted(case_dir.rglob("*"))
        if file.is_file() and file.name != "expected.json" and "fr" not in file.parts
    }
    loudest = labels.loudest_error(texts)
    document["loudest_error"] = loudest.describe() if loudest else None
    document["misleading"] = labels.is_misleading(
        loudest, document["expect_failure"], document["failure_class"], document["originating_rank"]
    )
    expected.write(case_dir, document)
    return document


def _terminate_as_interrupt(signum: int, frame: FrameType | None) -> None:
    # SIGTERM unwinds like Ctrl-C, so every run's cleanup (kill, cgroup, temp dir) still runs.
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    if args.list:
        _list(args.seed)
        return 0
    if args.relabel:
        for case_dir in args.relabel:
            document = relabel(case_dir)
            print(
                f"{case_dir.name}: misleading={document['misleading']} {document['loudest_error']}"
            )
        return 0
    signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    if orphans := isolation.reap_orphans():
        print(f"killed {len(orphans)} processes left by an earlier generator that died")
    chosen = [BY_ID[name] for name in args.scenario] if args.scenario else list(SCENARIOS)
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    rejected = 0
    for scenario in chosen:
        try:
            outcome = run_scenario(scenario, args.seed, args.out, args.keep_rejected)
        except KeyboardInterrupt:
            print(f"interrupted during {scenario.id}; its processes and files were cleaned up")
            return 130
        rejected += outcome.status is Status.REJECTED
        print(f"{outcome.status:8} {scenario.id:32} {outcome.elapsed_s:6.1f}s  {outcome.reason}")
        sys.stdout.flush()
    total = time.monotonic() - started
    print(f"{len(chosen)} scenarios in {total:.0f} s; {rejected} rejected")
    return 1 if rejected else 0


if __name__ == "__main__":
    sys.exit(main())
