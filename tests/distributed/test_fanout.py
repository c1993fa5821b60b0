"""The scan fanned out over processes gives exactly the single pass's diagnosis.

The same inputs diagnosed in one process and with their files scanned by several (a local pool,
or by hand in runs chosen to cut where it matters) must give the same JSON, timings aside:
every match, warning, year, dump and verdict.
"""

from __future__ import annotations

import os
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from denpex.distributed.codec import dump_bytes, dump_summary
from denpex.distributed.fanout import (
    assemble_units,
    local_rescan,
    plan_inputs,
    ref_json,
    scan_units,
)
from denpex.distributed.local import diagnose_parallel, scan_settings
from denpex.evidence import EvidenceOptions, assemble_scan
from denpex.hang.dumps import read_dump
from denpex.models import Diagnosis
from denpex.pipeline import DiagnoseOptions, diagnose, diagnose_evidence
from tests.conftest import BAD_SAMPLE, bundled_matcher
from tests.distributed.conftest import HANG_CASE

OPTIONS = DiagnoseOptions(cache_dir=Path(os.environ["DENPEX_CACHE_DIR"]))


def without_timings(value: Any) -> Any:
    """The diagnosis's JSON without the figures that measure how long it took."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k != "elapsed_ms"}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def as_json(diagnosis: Diagnosis) -> Any:
    return without_timings(diagnosis.model_dump(mode="json"))


def single_pass(paths: list[str]) -> Diagnosis:
    return diagnose(paths, OPTIONS, matcher=bundled_matcher())


@pytest.mark.parametrize("case", ["bad_sample", "job_2025", "mixed_job"])
def test_a_pool_of_workers_gives_the_single_pass_diagnosis(case: str, request) -> None:
    folder = BAD_SAMPLE if case == "bad_sample" else request.getfixturevalue(case)
    alone = single_pass([str(folder)])
    spread = diagnose_parallel([str(folder)], OPTIONS, workers=2)
    assert as_json(spread) == as_json(alone)


def _by_hand(paths: list[str], cuts: list[int]) -> tuple[Diagnosis, list[str]]:
    """The map run over the plan's files in runs starting at `cuts`, then the reduce."""
    plan = plan_inputs(paths)
    settings = scan_settings(OPTIONS, digests=False)
    bounds = [0, *cuts, len(plan.items)]
    units: dict[int, Any] = {}
    for start, end in pairwise(bounds):
        refs = [ref_json(plan.items[n].ref) for n in range(start, end)]
        result = scan_units(refs, settings.as_json())
        units.update(zip(range(start, end), result["units"], strict=True))
    assembled = assemble_units(
        plan,
        units,
        settings.signatures(),
        max_unpacked_bytes=settings.max_unpacked_bytes,
        rescan=local_rescan(settings),
    )
    evidence = assemble_scan(
        assembled.scan, settings.matcher().library.label, EvidenceOptions(limits=OPTIONS.limits)
    )
    return diagnose_evidence(evidence, OPTIONS, 0.0), assembled.rescanned


def test_a_log_without_years_read_first_by_its_worker_takes_the_jobs_year(job_2025: Path) -> None:
    plan = plan_inputs([str(job_2025)])
    kernel = next(n for n, item in enumerate(plan.items) if item.ref.shown.endswith("kern.log"))
    spread, rescanned = _by_hand([str(job_2025)], [kernel])
    # Its worker saw no earlier input, so it read "Mar  2" in the clock's year; the reduce
    # scanned it again in 2025, the year the single pass carries over from rank 0's log.
    assert rescanned == [plan.items[kernel].ref.shown]
    assert as_json(spread) == as_json(single_pass([str(job_2025)]))
    assert spread.root_causes[0].originating_host == "gpu-001"


def test_every_file_its_own_worker_still_gives_the_single_pass_diagnosis(mixed_job: Path) -> None:
    count = len(plan_inputs([str(mixed_job)]).items)
    spread, _ = _by_hand([str(mixed_job)], list(range(1, count)))
    assert as_json(spread) == as_json(single_pass([str(mixed_job)]))


def test_a_dump_summary_reads_as_the_dump_and_keeps_only_the_call_site_frame() -> None:
    for path in sorted((HANG_CASE / "dumps").iterdir()):
        data = path.read_bytes()
        summary = dump_summary(data)
        assert "pickle" in summary
        original, carried = read_dump(path.name, data), read_dump(path.name, dump_bytes(summary))
        assert carried == original
        assert [e.call_site for e in carried.entries] == [e.call_site for e in original.entries]
        assert all(e.call_site for e in original.entries)
        frames = [len(e["d"]["frames"]) for e in summary["pickle"]["d"]["entries"]]
        assert frames and set(frames) == {1}


def test_a_dump_that_cannot_be_read_is_refused_in_the_same_words() -> None:
    junk = b"\x80\x04not a pickle at all"
    with pytest.raises(Exception) as original:
        read_dump("fr_dump_3", junk)
    with pytest.raises(type(original.value)) as carried:
        read_dump("fr_dump_3", dump_bytes(dump_summary(junk)))
    assert str(carried.value) == str(original.value)
