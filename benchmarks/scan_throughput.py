"""Throughput and peak memory of the matcher and of `denpex diagnose`, next to `grep -F`.

    .venv/bin/python benchmarks/scan_throughput.py [--size-gib 1] [--ranks 64] [--dir DIR]

Generates (once, cached under --dir) a multi-rank log set built from real line shapes: Python
logging step lines, NCCL INFO chatter as a succeeded 4-node job printed it, HF Trainer metric
dicts, PyTorch warnings; at the end, a real failure (Xid 79 on one host, the watchdog timeouts
of the other ranks). Then measures, in the same run and on the same warm page cache:

- `grep -F -c -f KEYWORDS` over the files, KEYWORDS being the library's literal keywords (the
  reference: the fastest honest way to look for the same strings);
- the Hyperscan scanner alone (chunked reads plus one database scan per chunk);
- `denpex diagnose DIR --format json` end to end in a fresh process, with its peak RSS;
- the same end-to-end run on half of the files, to show peak memory does not grow with input.

Reports seconds, GB/s and ratios to grep. The machine is shared and noisy: each timing is the
best of --repeat runs, and only ratios measured in the same run should be compared.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

from denpex.ingest.reader import iter_chunks
from denpex.match.scan import Matcher
from denpex.signatures.library import CATALOG_SUFFIX, default_rules_dir, load_library

GIB = 1024**3
STAMP = "generated.json"

NCCL_CHATTER = [
    "{host}:{pid}:{tid} [{dev}] NCCL INFO Channel {ch:02d}/0 : {src}[{dev}] -> {dst}[{dev}] "
    "[receive] via NET/Socket/0",
    "{host}:{pid}:{tid} [{dev}] NCCL INFO Channel {ch:02d}/0 : {src}[{dev}] -> {dst}[{dev}] via "
    "P2P/IPC",
    "{host}:{pid}:{tid} [{dev}] NCCL INFO Connected all rings, use ring PXN 0 GDR 0",
    "{host}:{pid}:{tid} [{dev}] NCCL INFO TUNER/Plugin: Failed to find ncclTunerPlugin_v4 symbol.",
    "{host}:{pid}:{tid} [{dev}] NCCL INFO [Proxy Progress] Device {dev} CPU core {core}",
    "{host}:{pid}:{tid} [{dev}] NCCL INFO ncclCommInitRankConfig comm 0x{comm:x} rank {rank} "
    "nranks {world} cudaDev {dev} nvmlDev {dev} busId 1e0 commId 0x15c1c76db987339e - Init "
    "COMPLETE",
]
WARNINGS = [
    "{when} WARNING py.warnings: /opt/train.py:88: UserWarning: Implicit dimension choice for "
    "softmax has been deprecated. Change the call to include dim=X as an argument.",
]
XID_79 = (
    "{syslog} {host} kernel: NVRM: Xid (PCI:0000:86:00): 79, pid='<unknown>', name=<unknown>, "
    "GPU has fallen off the bus."
)
WATCHDOG = (
    "[rank{rank}]:[E{glog} ProcessGroupNCCL.cpp:629] [Rank {rank}] Watchdog caught collective "
    "operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=131072000, "
    "NumelOut=131072000, Timeout(ms)=600000) ran for 600081 milliseconds before timing out."
)


def _rank_lines(rank: int, world: int, target: int, rng: random.Random) -> list[str]:
    host = f"gpu-{rank // 8:03d}"
    start = datetime(2026, 11, 3, 2, 0, 0)
    pid, dev = 40000 + rank, rank % 8
    lines: list[str] = []
    size = step = 0
    while size < target:
        when = start + timedelta(seconds=step * 0.35)
        stamp = when.strftime("%Y-%m-%d %H:%M:%S,") + f"{when.microsecond // 1000:03d}"
        kind = rng.random()
        if kind < 0.45:
            line = f"{stamp} INFO train: step {step} loss {rng.uniform(1.5, 3.5):.4f} lr 3.0e-04"
            step += 1
        elif kind < 0.80:
            line = rng.choice(NCCL_CHATTER).format(
                host=host,
                pid=pid,
                tid=pid + rng.randrange(1, 9),
                dev=dev,
                ch=rng.randrange(32),
                src=rank,
                dst=(rank + 1) % world,
                core=rng.randrange(96),
                rank=rank,
                world=world,
                comm=rng.getrandbits(40),
            )
        elif kind < 0.97:
            line = (
                f"{{'loss': {rng.uniform(1.5, 3.5):.4f}, 'grad_norm': {rng.uniform(0.2, 4):.3f}, "
                f"'learning_rate': 4.9e-05, 'epoch': {step / 10000:.4f}}}"
            )
        else:
            line = rng.choice(WARNINGS).format(when=stamp)
        lines.append(line)
        size += len(line) + 1
    glog = (start + timedelta(seconds=step * 0.35 + 600)).strftime("%m%d %H:%M:%S.000000")
    if rank != 17:
        lines.append(WATCHDOG.format(rank=rank, glog=glog, seq=step * 3))
    return lines


def generate(directory: Path, size_gib: float, ranks: int, seed: int) -> None:
    stamp = directory.parent / f"{directory.name}-{STAMP}"  # beside the logs, not among them
    wanted = {"size_gib": size_gib, "ranks": ranks, "seed": seed}
    if stamp.exists() and json.loads(stamp.read_text()) == wanted:
        return
    directory.mkdir(parents=True, exist_ok=True)
    per_rank = int(size_gib * GIB / ranks)
    for rank in range(ranks):
        rng = random.Random(seed * 100_003 + rank)
        lines = _rank_lines(rank, ranks, per_rank, rng)
        host_dir = directory / f"gpu-{rank // 8:03d}"
        host_dir.mkdir(exist_ok=True)
        (host_dir / f"rank{rank}.log").write_text("\n".join(lines) + "\n")
    (directory / "gpu-002" / "kern.log").write_text(
        XID_79.format(syslog="Nov  3 02:59:58", host="gpu-002") + "\n"
    )
    stamp.write_text(json.dumps(wanted))


def log_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*.log"))


def best_of(repeat: int, run: callable) -> float:  # type: ignore[valid-type]
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        timings.append(time.perf_counter() - started)
    return min(timings)


def grep_seconds(files: list[Path], keywords: Path, repeat: int) -> float:
    command = ["grep", "-F", "-c", "-f", str(keywords), *map(str, files)]
    environment = {**os.environ, "LC_ALL": "C"}
    # Output goes to a pipe: GNU grep stops at the first match when stdout is /dev/null.
    return best_of(
        repeat,
        lambda: subprocess.run(command, stdout=subprocess.PIPE, env=environment, check=False),
    )


def scanner_seconds(files: list[Path], matcher: Matcher, repeat: int) -> tuple[float, float]:
    """(scan calls only, reads plus scans)."""
    scanner = matcher.scanner

    def scan_all() -> float:
        scanning = 0.0
        for path in files:
            with path.open("rb") as stream:
                for chunk in iter_chunks(stream, _Report()):
                    started = time.perf_counter()
                    scanner.candidate_lines(chunk.data)
                    scanning += time.perf_counter() - started
        return scanning

    scans: list[float] = []
    totals: list[float] = []
    for _ in range(repeat):
        started = time.perf_counter()
        scans.append(scan_all())
        totals.append(time.perf_counter() - started)
    return min(scans), min(totals)


class _Report:
    bytes = 0
    lines = 0
    cut_lines = 0
    error = None


def hand_written_rules(target: Path) -> Path:
    """A copy of the bundled library without the generated catalog families (`*_cat`): the
    library as it was before catalogs, to measure what they cost in the same run."""
    source = default_rules_dir()
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(f"*{CATALOG_SUFFIX}"))
    return target


def end_to_end(paths: list[str], repeat: int, rules: Path | None = None) -> tuple[float, int]:
    """Best wall time and the peak RSS (KiB) of `denpex diagnose` in a fresh process."""
    best, peak = float("inf"), 0
    for _ in range(repeat):
        command = [
            "/usr/bin/time",
            "-f",
            "%e %M",
            sys.executable,
            "-m",
            "denpex",
            "diagnose",
            *paths,
            "--format",
            "json",
            "--no-progress",
            *(["--rules", str(rules)] if rules is not None else []),
        ]
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"denpex diagnose failed: {done.stderr[-2000:]}")
        peak = max(peak, int(done.stderr.strip().splitlines()[-1].split()[1]))
        best = min(best, elapsed)
        summary = json.loads(done.stdout)["summary"]
    print(f"  diagnosis: {summary}")
    return best, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-gib", type=float, default=1.0)
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/denpex-bench"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out/scan_throughput.json"))
    parser.add_argument(
        "--against-hand-written",
        action="store_true",
        help="also time diagnose with the library minus the generated *_cat families",
    )
    args = parser.parse_args()

    print(f"generating {args.size_gib} GiB over {args.ranks} ranks in {args.dir} (cached) ...")
    generate(args.dir, args.size_gib, args.ranks, args.seed)
    files = log_files(args.dir)
    total = sum(p.stat().st_size for p in files)
    library = load_library()
    matcher = Matcher(library)
    keywords = args.dir.parent / f"{args.dir.name}-keywords.txt"  # not among the logs
    literals = sorted({k for ref in library.patterns for k in ref.spec.keywords})
    keywords.write_text("\n".join(literals) + "\n")
    for path in files:  # warm the page cache so every contender reads from memory
        path.read_bytes()

    print(
        f"{len(files)} files, {total / GIB:.2f} GiB, {len(library.signatures)} signatures, "
        f"{len(literals)} keywords; best of {args.repeat}"
    )
    grep = grep_seconds(files, keywords, args.repeat)
    scan_only, scan_with_reads = scanner_seconds(files, matcher, args.repeat)
    e2e, peak_kib = end_to_end([str(args.dir)], args.repeat)
    hand_e2e = None
    if args.against_hand_written:
        hand = hand_written_rules(args.dir.parent / f"{args.dir.name}-rules-hand-written")
        end_to_end([str(args.dir)], 1, hand)  # fills the compiled-database cache for it
        hand_e2e, _ = end_to_end([str(args.dir)], args.repeat, hand)
    half = [str(p) for p in files[: len(files) // 2]]
    half_bytes = sum(Path(p).stat().st_size for p in half)
    _, half_peak_kib = end_to_end(half, 1)

    rows = [
        ("grep -F -f keywords", grep),
        ("scanner alone (scan calls)", scan_only),
        ("scanner with chunked reads", scan_with_reads),
        ("denpex diagnose end to end", e2e),
    ]
    print(f"{'':32} {'seconds':>8} {'GB/s':>6} {'x grep':>7}")
    for name, seconds in rows:
        print(f"{name:32} {seconds:8.2f} {total / seconds / 1e9:6.2f} {seconds / grep:7.2f}")
    if hand_e2e is not None:
        print(
            f"diagnose with the full library / without catalogs: {e2e:.2f} s / "
            f"{hand_e2e:.2f} s = {e2e / hand_e2e:.2f}x"
        )
    print(
        f"peak RSS of diagnose: {peak_kib / 1024:.0f} MiB on {total / GIB:.2f} GiB, "
        f"{half_peak_kib / 1024:.0f} MiB on {half_bytes / GIB:.2f} GiB"
    )
    result = {
        "command": " ".join(sys.argv),
        "bytes": total,
        "files": len(files),
        "signatures": len(library.signatures),
        "keywords": len(literals),
        "seconds": dict(rows),
        "ratio_to_grep": {name: seconds / grep for name, seconds in rows},
        "diagnose_without_catalogs_seconds": hand_e2e,
        "catalog_cost_ratio": e2e / hand_e2e if hand_e2e else None,
        "peak_rss_mib": peak_kib / 1024,
        "peak_rss_half_input_mib": half_peak_kib / 1024,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
