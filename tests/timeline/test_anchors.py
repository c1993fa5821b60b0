"""Clock anchors other than step markers: a watchdog timeout marks when its collective began."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import diagnose_paths, write_job

# The form ProcessGroupNCCL prints (rules/c10d/watchdog_timeout.yaml); two ranks that waited in
# the same collective, on hosts whose clocks differ.
WATCHDOG = (
    "[rank{rank}]:[E1218 20:{minute}:{second}.426415 ProcessGroupNCCL.cpp:629] [Rank {rank}] "
    "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4411, OpType=ALLREDUCE, "
    "NumelIn=131072000, NumelOut=131072000, Timeout(ms)=600000) ran for {ran} milliseconds "
    "before timing out.\n"
)


def test_the_start_of_a_timed_out_collective_aligns_the_hosts(tmp_path: Path) -> None:
    # Both ranks entered SeqNum 4411 at the same moment; node02's clock runs 7 s ahead, and its
    # watchdog noticed 2 s later than node01's.
    job = write_job(
        tmp_path,
        {
            "node01/rank0.log": WATCHDOG.format(rank=0, minute=37, second="21", ran=600081),
            "node02/rank1.log": WATCHDOG.format(rank=1, minute=37, second="30", ran=602081),
        },
    )
    offsets = diagnose_paths([str(job)]).timeline.clock_offsets_s
    assert offsets == {"node01": 0.0, "node02": pytest.approx(7.0, abs=0.01)}
