"""Clock-drift correction on a real 4-rank run whose hosts' clocks are skewed by up to ±30 s.

The fixture is a real Gloo run (see fixtures/stalled_rank/produce.py): rank 2 fails to read a
shard at step 5 and stalls; ranks 0, 1 and 3 time out in all_reduce ten seconds later. Here each
rank's log is put on a host of its own whose clock is off by a random amount; the timeline must
recover the offsets from the steps every rank finished together and restore the true order of
first faults, without reordering anything inside a host.
"""

from __future__ import annotations

import random
import re
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from denpex.pipeline import scan_inputs
from denpex.timeline.order import build_timeline, order_key
from tests.conftest import bundled_matcher, diagnose_paths

FIXTURE = Path(__file__).parent / "fixtures" / "stalled_rank"
STAMP = re.compile(r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}),(\d{3})", re.M)


def _shift(text: str, seconds: float) -> str:
    def moved(found: re.Match[str]) -> str:
        moment = datetime.strptime(f"{found[1]}.{found[2]}", "%Y-%m-%d %H:%M:%S.%f")
        moment += timedelta(seconds=seconds)
        return moment.strftime("%Y-%m-%d %H:%M:%S,") + f"{moment.microsecond // 1000:03d}"

    return STAMP.sub(moved, text)


def _skewed_copy(root: Path, skews: dict[int, float]) -> Path:
    for rank, skew in skews.items():
        host = root / f"node{rank:02d}"
        host.mkdir(parents=True)
        text = (FIXTURE / f"rank{rank}.log").read_text()
        (host / f"rank{rank}.log").write_text(_shift(text, skew))
    return root


def _first_fault_times(path: Path) -> dict[int, float]:
    diagnosis = diagnose_paths([str(path)])
    return {
        entry.rank: entry.time.timestamp()
        for entry in diagnosis.timeline.first_abnormal
        if entry.rank is not None and entry.time is not None
    }


def _order(times: dict[int, float], gap: float = 1.0) -> set[tuple[int, int]]:
    """Pairs (a, b) where a's first fault precedes b's by more than `gap` seconds."""
    return {(a, b) for a in times for b in times if times[b] - times[a] > gap}


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_skewed_hosts_recover_the_true_order_of_first_faults(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    skews = {rank: rng.uniform(-30.0, 30.0) for rank in range(4)}
    skews[2] = 30.0 * (1 if seed % 2 else -1)  # the culprit's clock is off by the most
    truth = _first_fault_times(_skewed_copy(tmp_path / "true", dict.fromkeys(range(4), 0.0)))
    corrected = _first_fault_times(_skewed_copy(tmp_path / "skewed", skews))
    assert min(truth, key=truth.get) == 2
    assert _order(corrected) == _order(truth)
    assert min(corrected, key=corrected.get) == 2


def test_the_skew_would_have_misled_an_uncorrected_timeline(tmp_path: Path) -> None:
    skews = {0: -20.0, 1: -30.0, 2: 30.0, 3: 5.0}
    scan = scan_inputs([str(_skewed_copy(tmp_path, skews))], _matcher())
    faults = [m for m in scan.matches if m.role != "context" and m.event.time is not None]
    earliest_raw = min(faults, key=lambda m: m.event.time)
    assert earliest_raw.event.rank != 2
    assert diagnose_paths([str(tmp_path)]).root_causes[0].originating_rank == 2


def test_offsets_and_their_uncertainty_are_reported(tmp_path: Path) -> None:
    skews = {0: 12.5, 1: -7.25, 2: 30.0, 3: -30.0}
    diagnosis = diagnose_paths([str(_skewed_copy(tmp_path, skews))])
    offsets = diagnosis.timeline.clock_offsets_s
    reference = next(host for host, offset in offsets.items() if offset == 0.0)
    base = skews[int(reference.removeprefix("node"))]
    for host, offset in offsets.items():
        assert offset == pytest.approx(skews[int(host.removeprefix("node"))] - base, abs=0.1)
    for estimate in diagnosis.timeline.clock_estimates.values():
        assert 0.0 < estimate.uncertainty_s < 0.5
        assert estimate.anchors >= 5
    assert diagnosis.timeline.reordered_events > 0


def test_events_inside_one_host_are_never_reordered(tmp_path: Path) -> None:
    skews = {0: 29.0, 1: -29.0, 2: 17.0, 3: -3.0}
    scan = scan_inputs([str(_skewed_copy(tmp_path, skews))], _matcher())
    timeline = build_timeline(scan.matches)
    for host in {m.event.host for m in scan.matches}:
        raw = [m.event.offset for m in sorted(scan.matches, key=order_key) if m.event.host == host]
        ordered = [m.event.offset for m in timeline.matches if m.event.host == host]
        assert ordered == raw


def _matcher():
    return bundled_matcher()
