"""Load on `denpex serve`: concurrent signed clients over loopback, errors, throughput, latency.

    .venv/bin/python benchmarks/api_load.py [--requests 200] [--concurrency 8 32]

Starts `denpex serve` on 127.0.0.1 (a free port, a temporary tenants file, the incident store
off unless `--store` names one: then every request's nonce and diagnosis are written to it)
and, for each concurrency level, sends `--requests` signed `POST /v1/diagnoses` requests from
that many client threads: a mix of the bundled example as a .tar.gz (a confident,
4-rank diagnosis) and a single-line log. Reports errors (anything but 200), requests per second
and p50/p99 latency, and, as the reference measured in the same run, the same requests sent
one at a time (concurrency 1). Meanwhile one more client asks `/healthz` every 100 ms: its
p50/p99/max latency shows whether diagnoses hold up the event loop (they run in worker threads,
so it should stay far below a diagnosis's latency). Loopback only; every loop is bounded in
count and time.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from denpex.auth import signed_headers

REPO = Path(__file__).resolve().parents[1]
TENANT, SECRET = "bench", "bench-secret-0123456789"
PATH = "/v1/diagnoses"


def _bundle() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(REPO / "examples" / "torchrun-bad-sample", arcname="job")
    return buffer.getvalue()


BODIES = [
    _bundle(),
    b"[rank2]: RuntimeError: CUDA error: an illegal memory access was encountered\n",
]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _serve(port: int, tenants: Path, store: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "DENPEX_STORE": store}
    server = subprocess.Popen(
        [sys.executable, "-m", "denpex", "serve", "--tenants", str(tenants), "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                return server
        except httpx.HTTPError:
            time.sleep(0.5)
    server.kill()
    raise SystemExit("the server did not become ready within 120 s")


def _one(client: httpx.Client, index: int) -> tuple[int, float]:
    body = BODIES[index % len(BODIES)]
    started = time.perf_counter()
    try:
        response = client.post(
            PATH, content=body, headers=signed_headers(SECRET, TENANT, "POST", PATH, body)
        )
        status = response.status_code
    except httpx.HTTPError:
        status = -1
    return status, time.perf_counter() - started


def _health_probe(base: str, done: threading.Event, seconds: list[float]) -> None:
    """Asks /healthz every 100 ms until `done` (at most 30 minutes); records each latency."""
    deadline = time.monotonic() + 1800
    with httpx.Client(base_url=base, timeout=60) as client:
        while not done.is_set() and time.monotonic() < deadline:
            started = time.perf_counter()
            try:
                client.get("/healthz").raise_for_status()
                seconds.append(time.perf_counter() - started)
            except httpx.HTTPError:
                seconds.append(float("inf"))
            done.wait(0.1)


def _percentile(ordered: list[float], share: float) -> float:
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def _level(base: str, requests: int, concurrency: int) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=concurrency)
    health: list[float] = []
    done = threading.Event()
    probe = threading.Thread(target=_health_probe, args=(base, done, health))
    probe.start()
    try:
        with httpx.Client(base_url=base, timeout=120, limits=limits) as client:
            started = time.perf_counter()
            with ThreadPoolExecutor(max_workers=concurrency) as pool:
                results = list(pool.map(lambda i: _one(client, i), range(requests)))
            wall = time.perf_counter() - started
    finally:
        done.set()
        probe.join(120)
    latencies = sorted(seconds for _, seconds in results)
    health.sort()
    return {
        "concurrency": concurrency,
        "requests": requests,
        "errors": sum(1 for status, _ in results if status != 200),
        "requests_per_s": round(requests / wall, 2),
        "p50_ms": round(1000 * statistics.median(latencies), 1),
        "p99_ms": round(1000 * _percentile(latencies, 0.99), 1),
        "healthz_probes": len(health),
        "healthz_p50_ms": round(1000 * statistics.median(health), 1) if health else None,
        "healthz_p99_ms": round(1000 * _percentile(health, 0.99), 1) if health else None,
        "healthz_max_ms": round(1000 * health[-1], 1) if health else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32])
    parser.add_argument(
        "--store",
        default="off",
        help="the incident store the server records into (a SQLite path or URL; default off)",
    )
    args = parser.parse_args()
    port = _free_port()
    with tempfile.TemporaryDirectory() as scratch:
        tenants = Path(scratch) / "tenants.json"
        tenants.write_text(json.dumps({TENANT: SECRET}))
        server = _serve(port, tenants, args.store)
        try:
            base = f"http://127.0.0.1:{port}"
            rows = [_level(base, min(args.requests, 50), 1)]
            rows += [_level(base, args.requests, level) for level in args.concurrency]
        finally:
            server.terminate()
            server.wait(timeout=30)
    reference = rows[0]["requests_per_s"]
    for row in rows:
        row["x_sequential_throughput"] = round(row["requests_per_s"] / reference, 2)
        print(json.dumps(row))


if __name__ == "__main__":
    main()
