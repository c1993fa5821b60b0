"""End to end at 4,096 ranks x 256 KiB: one process, a local pool, Celery workers, node bundles.

    .venv/bin/python benchmarks/scale_out.py [--ranks 4096] [--kib 256] [--repeat 1]
                                             [--broker redis://127.0.0.1:6379/0]

Generates (once, cached) 4,096 ranks' logs of 256 KiB each (1 GiB; `scan_throughput.py`'s
real line shapes, 8 ranks per host folder, ending in an Xid 79 on one host and the other ranks'
watchdog timeouts), warms the page cache and the compiled library, then measures in the same
run, each in a fresh process, wall seconds and CPU seconds (user + system, the children's too):

- `denpex diagnose` in one process: the reference every ratio is to;
- `denpex diagnose --workers N` for N = 2 and 4 (a local process pool, no broker);
- `denpex diagnose --broker URL` with one Celery worker of concurrency N = 1, 2 and 4
  (started beforehand; the figure is submit to diagnosis, the client's walk and the reduce
  included), when the broker answers;
- the broker's cost per task: a job of 200 one-line files split into 200 scan tasks;
- node bundles: every host folder made into a bundle as its node would (`make_bundle`, the
  node-side cost summed over nodes), their sizes against the logs', and the service's assembly
  of all of them into the diagnosis (`open_bundle` + `assemble_bundles` + reasoning).

Every run diagnoses the host folders side by side (`denpex diagnose gpu-000 gpu-001 ...` in the
logs' folder), so every diagnosis, the bundles' included, is checked equal to the reference's
(timings aside). Results go to --out as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from scan_throughput import generate

KIB = 1024
GIB = 1024**3


def without_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k != "elapsed_ms"}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_denpex(args: list[str], cwd: Path | None = None) -> tuple[float, float, dict]:
    """(wall s, CPU s, diagnosis JSON) of one fresh `denpex` process."""
    cpu = children_cpu()
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "denpex", *args, "--format", "json", "--no-progress"],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env={**os.environ, "DENPEX_STORE": "off"},
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"denpex {' '.join(args[:3])} failed: {done.stderr[-2000:]}")
    return wall, children_cpu() - cpu, json.loads(done.stdout)


def best(repeat: int, args: list[str], cwd: Path | None = None) -> tuple[float, float, dict]:
    runs = [run_denpex(args, cwd) for _ in range(repeat)]
    wall, cpu, diagnosis = min(runs, key=lambda r: r[0])
    return wall, cpu, diagnosis


def warm(directory: Path) -> None:
    for path in directory.rglob("*.log"):
        path.read_bytes()


def broker_up(broker: str) -> str | None:
    try:
        import redis
    except ImportError:
        return "the redis client is not installed (pip install 'denpex[celery]')"
    try:
        redis.Redis.from_url(broker, socket_connect_timeout=3).ping()
    except redis.RedisError as error:
        return f"{broker} does not answer ({error})"
    return None


class Worker:
    """`denpex jobs worker` of concurrency N on its own queue, until stopped."""

    def __init__(self, broker: str, concurrency: int, log: Path) -> None:
        self.queue = f"bench-{uuid.uuid4().hex[:8]}"
        self.broker = broker
        self.log = log
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "denpex",
                "jobs",
                "worker",
                "--broker",
                broker,
                "--queue",
                self.queue,
                "--concurrency",
                str(concurrency),
            ],
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 300
        while b" ready." not in log.read_bytes():
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise SystemExit(f"the worker did not start: {log.read_text()[-2000:]}")
            time.sleep(0.5)

    def stop(self) -> None:
        os.killpg(self.process.pid, 15)
        self.process.wait(timeout=60)
        # The job's results stay in Redis for the result expiry (days): about 1.5 GB for a
        # 1 GiB job. Everything the run wrote is named after its queue.
        if not self.broker.startswith(("redis://", "rediss://")):
            return
        import redis

        client = redis.Redis.from_url(self.broker)
        keys = list(client.scan_iter(match=f"{self.queue}*", count=1000))
        if keys:
            client.delete(*keys)


def bundles(directory: Path, nodes: list[str]) -> dict[str, Any]:
    """Every node's bundle made here (summed node-side cost), then assembled as the service does."""
    from denpex.auth import Tenant
    from denpex.distributed.bundles import BundleName, assemble_bundles, make_bundle, open_bundle
    from denpex.distributed.codec import Signatures
    from denpex.distributed.local import scan_settings
    from denpex.evidence import EvidenceOptions, assemble_scan
    from denpex.hybrid.harvest import abnormal_lines
    from denpex.pipeline import DiagnoseOptions, diagnose_evidence

    secret = "bench-secret-0123456789"
    options = DiagnoseOptions(cache_dir=Path(os.environ["DENPEX_CACHE_DIR"]))
    settings = scan_settings(options, digests=True)
    settings.matcher()
    made: list[bytes] = []
    raw_bytes: list[int] = []
    started = time.perf_counter()
    for node in nodes:
        name = BundleName("bench", "cluster", "job-4096", node)
        made.append(make_bundle(str(directory / node), name, secret, settings))
        raw_bytes.append(
            sum(p.stat().st_size for p in (directory / node).rglob("*") if p.is_file())
        )
    node_side = time.perf_counter() - started
    tenants = {"bench": Tenant("bench", secret)}
    started = time.perf_counter()
    opened = [open_bundle(data, tenants, max_bytes=GIB) for data in made]
    signatures = Signatures.of(settings.matcher().library, abnormal_lines().matcher.library)
    assembled = assemble_bundles(opened, signatures, max_unpacked_bytes=16 * GIB)
    evidence = assemble_scan(
        assembled.scan, settings.matcher().library.label, EvidenceOptions(limits=options.limits)
    )
    diagnosis = diagnose_evidence(evidence, options, started)
    service_side = time.perf_counter() - started
    sizes = [len(data) for data in made]
    return {
        "nodes": len(nodes),
        "node_side_s_total": round(node_side, 2),
        "node_side_s_per_node": round(node_side / len(nodes), 4),
        "raw_bytes_per_node": round(sum(raw_bytes) / len(nodes)),
        "bundle_bytes_per_node_mean": round(sum(sizes) / len(sizes)),
        "bundle_bytes_per_node_max": max(sizes),
        "bundle_bytes_total": sum(sizes),
        "service_assembly_s": round(service_side, 2),
        "diagnosis": diagnosis.model_dump(mode="json"),
    }


def broker_per_task(broker: str, scratch: Path, tasks: int) -> dict[str, Any]:
    """A job of `tasks` one-line files, one scan task each, on one worker of concurrency 2."""
    tiny = scratch / "tiny"
    tiny.mkdir(exist_ok=True)
    for number in range(tasks):
        (tiny / f"rank{number}.log").write_text(f"[rank{number}]: step 1 loss 2.0\n")
    worker = Worker(broker, 2, scratch / "worker-tiny.log")
    try:
        wall, _, _ = run_denpex(
            [
                "diagnose",
                str(tiny),
                "--broker",
                broker,
                "--queue",
                worker.queue,
                "--parts",
                str(tasks),
            ]
        )
    finally:
        worker.stop()
    return {"tasks": tasks, "wall_s": round(wall, 2), "ms_per_task": round(1000 * wall / tasks, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=4096)
    parser.add_argument("--kib", type=int, default=256)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/denpex-bench-scale"))
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--workers", type=int, nargs="*", default=[2, 4], help="local pool sizes to time"
    )
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/0")
    parser.add_argument(
        "--celery", type=int, nargs="*", default=[1, 2, 4], help="worker concurrencies to time"
    )
    parser.add_argument("--parts", type=int, default=64)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out/scale_out.json"))
    args = parser.parse_args()
    os.environ.setdefault("DENPEX_CACHE_DIR", tempfile.mkdtemp(prefix="denpex-bench-cache-"))

    directory = args.dir / f"{args.ranks}x{args.kib}k"
    generate(directory, args.ranks * args.kib * KIB / GIB, args.ranks, args.seed)
    total = sum(p.stat().st_size for p in directory.rglob("*.log"))
    print(
        f"{args.ranks} ranks, {total / GIB:.2f} GiB in {directory}; cpus {os.cpu_count()}, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    warm(directory)
    run_denpex(["diagnose", str(directory / "gpu-000")])  # compiles the library into the cache
    results: dict[str, Any] = {
        "ranks": args.ranks,
        "bytes": total,
        "cpus": os.cpu_count(),
        "load_before": os.getloadavg()[0],
        "runs": [],
    }

    nodes = sorted(p.name for p in directory.iterdir() if p.is_dir())

    def timed(extra: list[str]) -> tuple[float, float, dict]:
        return best(args.repeat, ["diagnose", *nodes, *extra], cwd=directory)

    wall, cpu, reference = timed([])
    expected = without_timings(reference)
    print(f"  reference: {reference['summary'][:120]}")

    def record(label: str, wall_s: float, cpu_s: float, diagnosis: dict) -> None:
        same = without_timings(diagnosis) == expected
        results["runs"].append(
            {
                "label": label,
                "wall_s": round(wall_s, 2),
                "cpu_s": round(cpu_s, 2),
                "x_one_process": round(wall / wall_s, 2),
                "same_diagnosis": same,
            }
        )
        print(
            f"  {label:<36} {wall_s:8.2f} s wall {cpu_s:8.2f} s CPU  "
            f"{wall / wall_s:5.2f}x  same={same}",
            flush=True,
        )

    record("one process (reference)", wall, cpu, reference)
    for workers in args.workers:
        record(f"--workers {workers} (local pool)", *timed(["--workers", str(workers)]))

    problem = broker_up(args.broker) if args.celery else "not asked for (--celery)"
    if problem is None:
        scratch = Path(tempfile.mkdtemp(prefix="denpex-bench-celery-"))
        for concurrency in args.celery:
            worker = Worker(args.broker, concurrency, scratch / f"worker-{concurrency}.log")
            try:
                measured = timed(
                    ["--broker", args.broker, "--queue", worker.queue, "--parts", str(args.parts)]
                )
            finally:
                worker.stop()
            record(f"Celery, 1 worker x {concurrency} processes", *measured)
        results["broker_per_task"] = broker_per_task(args.broker, scratch, 200)
        print(f"  broker cost: {results['broker_per_task']}", flush=True)
    else:
        results["celery_skipped"] = problem
        print(f"  Celery runs skipped: {problem}")

    measured_bundles = bundles(directory, nodes)
    measured_bundles["same_diagnosis"] = (
        without_timings(measured_bundles.pop("diagnosis")) == expected
    )
    results["bundles"] = measured_bundles
    print(f"  bundles: {measured_bundles}")
    results["load_after"] = os.getloadavg()[0]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
