"""NCCL-shaped dumps, where `state` records discovered start and completion.

No GPU is available to this project's CI, so these dumps are the real Gloo dumps of
`withheld_one` rewritten the way NCCL's Flight Recorder fills the same fields
(FlightRecorderDetail.hpp: `state` is `completed` once the end event is queried as complete,
`started` once the start event is, else `scheduled`; `time_discovered_*_ns` are set with it;
`pg_config` names each group with its ranks). The scenarios are constructed; every field is one
torch writes.
"""

from __future__ import annotations

import pickle
from typing import Any

from denpex.hang.plain_pickle import load_plain
from denpex.hang.triage import triage_dumps
from tests.hang.conftest import case_dir

SOURCE = case_dir("withheld_one") / "dumps"


def _nccl(rank: int, stuck_state: str | None, *, extra_seq: bool = False) -> dict[str, Any]:
    """Rank `rank`'s real dump as NCCL would write it; seq 6 in `stuck_state` (None: absent)."""
    raw = load_plain((SOURCE / "fr_dump_0").read_bytes())
    raw["pg_config"] = {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2, 3]"}}
    raw["comm_lib_version"] = "2.21.5"
    entries = []
    for entry in raw["entries"]:
        entry = {**entry, "profiling_name": entry["profiling_name"].replace("gloo:", "nccl:")}
        created = entry["time_created_ns"]
        if entry["collective_seq_id"] < 6 or (extra_seq and entry["collective_seq_id"] == 6):
            entry.update(
                state="completed",
                time_discovered_started_ns=created + 1_000,
                time_discovered_completed_ns=created + 2_000,
                retired=True,
            )
        elif stuck_state is None:
            continue
        else:
            entry.update(
                state=stuck_state,
                time_discovered_started_ns=created + 1_000 if stuck_state == "started" else None,
                time_discovered_completed_ns=None,
                retired=False,
            )
        entries.append(entry)
    if extra_seq:  # went on: seq 7 enqueued, not started
        following = {**entries[-1], "record_id": entries[-1]["record_id"] + 1}
        following.update(
            collective_seq_id=7,
            op_id=7,
            state="scheduled",
            time_discovered_started_ns=None,
            time_discovered_completed_ns=None,
            retired=False,
        )
        entries.append(following)
    raw["entries"] = entries
    last = max(e["collective_seq_id"] for e in entries)
    done = max(e["collective_seq_id"] for e in entries if e["state"] == "completed")
    started = [e["collective_seq_id"] for e in entries if e["state"] != "scheduled"]
    raw["pg_status"] = {
        "0": {
            "last_enqueued_collective": last,
            "last_started_collective": max(started),
            "last_completed_collective": done,
        }
    }
    return raw


def _triage(dumps: dict[int, dict[str, Any]]):
    return triage_dumps(
        [(f"nccl_trace_rank_{r}", pickle.dumps(d, protocol=2)) for r, d in sorted(dumps.items())]
    )


def test_the_membership_comes_from_pg_config_when_the_backend_records_it() -> None:
    report = _triage({r: _nccl(r, "started") for r in range(4)})
    (group,) = report.process_groups
    assert group.members_from == "pg_config"
    assert report.expected_ranks_from == "the default group's pg_config"


def test_a_rank_whose_kernel_never_started_while_the_others_did_is_stalled() -> None:
    dumps = {r: _nccl(r, "started") for r in (0, 1, 3)} | {2: _nccl(2, "scheduled")}
    best = _triage(dumps).candidates[0]
    assert (best.kind.value, best.ranks, best.seq) == ("stalled", [2], 6)
    assert "never started" in best.summary


def test_a_rank_still_inside_a_collective_its_peers_finished_and_moved_past_is_stalled() -> None:
    dumps = {r: _nccl(r, "started", extra_seq=True) for r in (0, 1, 3)}
    dumps[2] = _nccl(2, "started")
    best = _triage(dumps).candidates[0]
    assert (best.kind.value, best.ranks, best.seq) == ("stalled", [2], 6)
    assert "moved past" in best.summary


def test_everyone_inside_the_same_collective_singles_out_no_one() -> None:
    report = _triage({r: _nccl(r, "started") for r in range(4)})
    best = report.candidates[0]
    assert best.kind.value == "stalled" and best.ranks == [0, 1, 2, 3]
    assert best.confidence <= 0.25
    assert "do not single out a rank" in best.summary


def test_a_rank_that_never_enqueued_it_is_never_entered_on_nccl_too() -> None:
    dumps = {r: _nccl(r, "started") for r in (0, 1, 3)} | {2: _nccl(2, None)}
    best = _triage(dumps).candidates[0]
    assert (best.kind.value, best.ranks, best.seq) == ("never_entered", [2], 6)
