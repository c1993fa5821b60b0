"""`denpex diagnose --workers N`: the scan fanned out over a local process pool, no broker.

Consumes input paths, `DiagnoseOptions` and a number of worker processes; produces the same
`Diagnosis` as `denpex.pipeline.diagnose` (identical apart from timings): the files are split
into runs of about equal bytes, each run scanned by a pool process (`scan_units`), and this
process assembles the evidence and reasons over it. Standard input and named pipes can only be
read by this process, so inputs that include one are scanned here, in one pass.
"""

from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, BinaryIO

from denpex.distributed.fanout import (
    ScanProgress,
    ScanSettings,
    assemble_units,
    check_results,
    local_rescan,
    parts_of,
    plan_inputs,
    ref_json,
    scan_units,
)
from denpex.evidence import EvidenceOptions, assemble_scan
from denpex.ingest.sources import StreamRef
from denpex.models import Diagnosis
from denpex.pipeline import DiagnoseOptions, Hybrid, diagnose, diagnose_evidence

PARTS_PER_WORKER = 4
"""Runs of files per worker: more than one, so a worker that drew large files does not hold
the rest back."""


def scan_settings(options: DiagnoseOptions, *, digests: bool) -> ScanSettings:
    return ScanSettings(
        rules_dir=str(options.rules_dir) if options.rules_dir else None,
        experimental=options.experimental,
        backend=options.backend,
        cache_dir=str(options.cache_dir) if options.cache_dir else None,
        overlay_dir=str(options.overlay_dir) if options.overlay_dir else None,
        max_unpacked_bytes=options.limits.max_unpacked_bytes,
        digests=digests,
    )


def diagnose_parallel(
    paths: list[str],
    options: DiagnoseOptions | None = None,
    *,
    workers: int,
    stdin: BinaryIO | None = None,
    progress: ScanProgress | None = None,
    hybrid: Hybrid | None = None,
) -> Diagnosis:
    """The diagnosis of `paths`, their scan spread over `workers` processes."""
    started = time.perf_counter()
    options = options or DiagnoseOptions()
    plan = plan_inputs(paths)
    if workers <= 1 or any(isinstance(item.ref, StreamRef) for item in plan.items):
        return diagnose(paths, options, stdin=stdin, progress=progress, hybrid=hybrid)
    settings = scan_settings(options, digests=hybrid is not None)
    settings.matcher()  # compiled once here; forked workers inherit it
    runs = parts_of(plan, workers * PARTS_PER_WORKER)
    units: dict[int, Any] = {}
    unpacked = 0
    results = []
    with ProcessPoolExecutor(workers, mp_context=pool_context()) as pool:
        pending = {
            pool.submit(
                scan_units, [ref_json(plan.items[n].ref) for n in run], settings.as_json()
            ): run
            for run in runs
        }
        for done in as_completed(pending):
            result = done.result()
            results.append(result)
            units.update(zip(pending[done], result["units"], strict=True))
            unpacked += result["unpacked_bytes"]
            if progress is not None:
                for unit in result["units"]:
                    for scanned in unit["inputs"]:
                        progress(scanned["name"], scanned["bytes"])
    signatures = settings.signatures()
    check_results(results, signatures)
    assembled = assemble_units(
        plan,
        units,
        signatures,
        max_unpacked_bytes=settings.max_unpacked_bytes,
        unpacked_bytes=unpacked,
        rescan=local_rescan(settings),
    )
    evidence = assemble_scan(
        assembled.scan, settings.matcher().library.label, EvidenceOptions(limits=options.limits)
    )
    return diagnose_evidence(evidence, options, started, hybrid)


def pool_context() -> multiprocessing.context.BaseContext:
    """Fork where there is fork (workers start with the compiled library in memory)."""
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")
