"""Hang triage at 4,096 ranks, expanded from the real dumps of an eval case.

Usage (from the repository root):

    .venv/bin/python benchmarks/hang_scale.py                      # 4096 ranks, real history
    .venv/bin/python benchmarks/hang_scale.py --ranks 4096 --history 200

The expansion keeps the real dumps' structure: every rank's dump is a real rank's dump from
`evals/hang/withheld_one` (rank 2 never entered seq 6; ranks 0, 1, 3 wait in it). One rank of the
expansion, chosen by a seeded draw, gets the withheld rank's dump; every other rank gets one of
the waiting ranks' dumps. `--history N` prepends N completed collectives to every dump (copies
of a real completed entry, renumbered), as a longer-running job's ring buffer would hold; seq ids
shift so that the stuck collective stays the last one. Dumps are named
`node<NNNN>/fr_dump_<rank>` (8 ranks per host), pickled with protocol 2 as torch writes them.

Measured in the same run, so that ratios survive a noisy shared machine:
- `pickle.loads` of every dump: the unsafe standard unpickler, the floor for any reader;
- `read_dump` of every dump: the restricted loader and normalisation alone;
- `triage_dumps`: everything, from bytes to the ranked report;
- `denpex hang DIR` (`hang_from_paths`): the same dumps written to a temporary directory, read
  through ingest and the signature scan as the command line does.
Each is the best of `--repeat` runs. The triage must also name the planted rank.
"""

from __future__ import annotations

import argparse
import pickle
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CASE = REPO / "evals" / "hang" / "withheld_one"
CULPRIT_TEMPLATE = 2
PEER_TEMPLATES = (0, 1, 3)


def load_templates() -> dict[int, dict[str, Any]]:
    from denpex.hang.plain_pickle import load_plain

    return {
        rank: load_plain((CASE / "dumps" / f"fr_dump_{rank}").read_bytes())
        for rank in (CULPRIT_TEMPLATE, *PEER_TEMPLATES)
    }


def with_history(dump: dict[str, Any], history: int) -> dict[str, Any]:
    """The dump with `history` completed collectives before its own, seq ids shifted after."""
    if history == 0:
        return dump
    entries = dump["entries"]
    done = next(e for e in entries if e["retired"])
    older = [
        {**done, "record_id": i, "collective_seq_id": i + 1, "op_id": i + 1} for i in range(history)
    ]
    shifted = [
        {
            **e,
            "record_id": e["record_id"] + history,
            "collective_seq_id": e["collective_seq_id"] + history,
            "op_id": e["op_id"] + history,
        }
        for e in entries
    ]
    status = {
        pg: {key: (value + history if value >= 0 else value) for key, value in counters.items()}
        for pg, counters in dump["pg_status"].items()
    }
    return {**dump, "entries": older + shifted, "pg_status": status}


def expand(ranks: int, history: int, seed: int = 4096) -> tuple[list[tuple[str, bytes]], int]:
    """(name, pickled dump) per rank, and the rank that never entered the stuck collective."""
    templates = {
        rank: pickle.dumps(with_history(dump, history), protocol=2)
        for rank, dump in load_templates().items()
    }
    culprit = random.Random(seed).randrange(ranks)
    dumps = []
    for rank in range(ranks):
        template = CULPRIT_TEMPLATE if rank == culprit else PEER_TEMPLATES[rank % 3]
        dumps.append((f"node{rank // 8:04d}/fr_dump_{rank}", templates[template]))
    return dumps, culprit


def best_of(repeat: int, work: Callable[[], object]) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = work()
        best = min(best, time.perf_counter() - started)
    return best, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=4096)
    parser.add_argument("--history", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--budget-s", type=float, default=10.0)
    args = parser.parse_args()

    from denpex.hang.dumps import read_dump
    from denpex.hang.triage import triage_dumps
    from denpex.hang_view import HangRequest, hang_from_paths
    from denpex.match.compiled import compiled_matcher
    from denpex.settings import Settings

    # As `denpex hang` runs: the library from its cache (parsed signatures and compiled
    # database), compiled once before timing; without it the first timed run parsed the whole
    # library and compiled its database (20 s with 22,000 signatures).
    cache = Settings().cache_folder
    compiled_matcher(cache_dir=cache)

    dumps, culprit = expand(args.ranks, args.history)
    total = sum(len(data) for _, data in dumps)
    entries = len(pickle.loads(dumps[0][1])["entries"])
    print(f"$ {Path(sys.executable).name} benchmarks/hang_scale.py " + " ".join(sys.argv[1:]))
    print(
        f"{args.ranks} dumps, {total / 1e6:.1f} MB, {entries} entries each "
        f"(history {args.history}); planted rank {culprit}; best of {args.repeat}"
    )
    loads_s, _ = best_of(args.repeat, lambda: [pickle.loads(data) for _, data in dumps])
    read_s, _ = best_of(args.repeat, lambda: [read_dump(name, data) for name, data in dumps])
    triage_s, report = best_of(args.repeat, lambda: triage_dumps(dumps))
    with tempfile.TemporaryDirectory() as scratch:
        for name, data in dumps:
            path = Path(scratch) / name
            path.parent.mkdir(exist_ok=True)
            path.write_bytes(data)
        command_s, _ = best_of(
            args.repeat,
            lambda: hang_from_paths(
                HangRequest(paths=[scratch], world_size=args.ranks, cache_dir=cache)
            ),
        )
    top = report.candidates[0]  # type: ignore[attr-defined]
    found = top.kind.value == "never_entered" and top.ranks == [culprit]
    rows = [
        ("pickle.loads (unsafe floor)", loads_s, ""),
        ("read_dump (restricted parse)", read_s, f"= {read_s / loads_s:4.1f}x pickle.loads"),
        ("triage_dumps (from bytes)", triage_s, f"= {triage_s / loads_s:4.1f}x pickle.loads"),
        ("denpex hang DIR (files, ingest)", command_s, f"= {command_s / triage_s:4.1f}x triage"),
    ]
    for label, seconds, ratio in rows:
        print(f"{label:<32} {seconds:6.2f} s  {ratio}".rstrip())
    print(
        f"verdict: {top.kind.value} {top.ranks} on {top.hosts} (planted {culprit}): "
        f"{'found' if found else 'MISSED'}"
    )
    within = max(triage_s, command_s) < args.budget_s
    print(f"budget {args.budget_s:.0f} s: {'met' if within else 'MISSED'}")
    return 0 if found and within else 1


if __name__ == "__main__":
    sys.exit(main())
