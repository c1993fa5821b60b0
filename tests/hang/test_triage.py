"""`triage_dumps`, the function `denpex diagnose` calls: bytes in, a ranked report out."""

from __future__ import annotations

import json

import pytest

from denpex.hang.dumps import DumpError
from denpex.hang.triage import DumpFile, HangOptions, triage_dumps
from tests.hang.conftest import case_dir

WITHHELD = case_dir("withheld_one")


def _dumps(case: str = "withheld_one", form: str = "dumps") -> list[tuple[str, bytes]]:
    return [(f"{form}/{p.name}", p.read_bytes()) for p in sorted((case_dir(case) / form).iterdir())]


def _times(case: str = "withheld_one") -> dict[str, float]:
    return json.loads((case_dir(case) / "capture_times.json").read_text())


def test_plain_name_and_bytes_pairs_are_enough() -> None:
    report = triage_dumps(_dumps())
    assert report.candidates[0].ranks == [2]
    assert report.expected_ranks == [0, 1, 2, 3]
    assert report.provenance.rules_version is None


def test_dump_files_carry_the_host_and_capture_time_the_caller_knows() -> None:
    times = _times()
    files = [
        DumpFile(
            name, data, host=f"gpu-{int(name[-1]) // 2:03d}", captured_at=times[name.split("/")[-1]]
        )
        for name, data in _dumps()
    ]
    report = triage_dumps(files)
    assert report.candidates[0].hosts == ["gpu-001"]
    assert all(d.captured_at is not None for d in report.dumps)
    assert not any("capture times unknown" in note for note in report.incomplete)


def test_a_rank_with_both_a_pickle_and_a_json_dump_is_read_once_preferring_the_pickle() -> None:
    report = triage_dumps(_dumps() + _dumps(form="dumps_json"))
    used = [d for d in report.dumps if d.used]
    assert len(used) == 4 and {d.format for d in used} == {"pickle"}
    assert len(report.dumps) == 8
    assert report.candidates[0].ranks == [2]


def test_a_larger_world_size_makes_the_ranks_without_dumps_silent() -> None:
    report = triage_dumps(_dumps(), options=HangOptions(world_size=6))
    assert report.missing_ranks == [4, 5]
    best = report.candidates[0]
    assert best.kind.value == "never_entered" and best.ranks == [2]
    assert best.confidence < 0.85, "ranks 4 and 5 may be the real cause"
    stopped = next(c for c in report.candidates if c.kind.value == "stopped_reporting")
    assert stopped.ranks == [4, 5]


def test_without_a_world_size_the_gap_above_the_highest_dump_is_said() -> None:
    report = triage_dumps(_dumps())
    assert report.expected_ranks_from == "the highest rank a dump's name states"
    assert any("pass --world-size" in note for note in report.incomplete)


def test_an_unreadable_dump_silences_its_rank_with_the_reason() -> None:
    dumps = [(n, d[:300] if n.endswith("_3") else d) for n, d in _dumps()]
    report = triage_dumps(dumps)
    assert report.missing_ranks == [3]
    assert any(w.startswith("dumps/fr_dump_3: truncated pickle") for w in report.warnings)
    stopped = next(c for c in report.candidates if c.kind.value == "stopped_reporting")
    assert "dump unreadable" in stopped.evidence[0].text


def test_a_dump_whose_name_states_no_rank_is_left_out_with_a_warning() -> None:
    dumps = [("flight_recorder.pkl", d) if n.endswith("_0") else (n, d) for n, d in _dumps()]
    report = triage_dumps(dumps)
    assert any("cannot tell which rank wrote it" in w for w in report.warnings)
    assert 0 in report.missing_ranks


def test_no_usable_dump_at_all_is_an_error_listing_each_file() -> None:
    with pytest.raises(DumpError, match=r"no usable Flight Recorder dump: a: empty file.*b: "):
        triage_dumps([("a", b""), ("b", b"garbage")])


def test_the_report_names_each_groups_progress_per_rank() -> None:
    report = triage_dumps(_dumps(), options=HangOptions(capture_times=_times()))
    (group,) = report.process_groups
    assert (group.name, group.desc, group.members_from, group.stuck_seq) == (
        "0",
        "default_pg",
        "world",
        6,
    )
    by_rank = {r.rank: r for r in group.ranks}
    assert by_rank[2].last_enqueued == 5 and by_rank[2].waiting_in is None
    assert by_rank[0].last_enqueued == 6 and by_rank[0].waiting_in == "seq 6 gloo:all_reduce"


def test_the_candidate_carries_when_the_hang_began_and_where_the_code_called() -> None:
    best = triage_dumps(_dumps()).candidates[0]
    assert best.since is not None
    waiting = best.evidence[1]
    assert waiting.ranks == [0, 1, 3] and waiting.seq == 6
    assert waiting.call_site and "generate.py" in waiting.call_site


def test_a_gloo_dump_taken_after_the_timeout_does_not_pass_for_completed() -> None:
    # Rank 0's seq 6 entry, as Gloo shows it after the timeout fired: retired, counted complete.
    from denpex.hang.plain_pickle import load_plain

    raw = load_plain((WITHHELD / "dumps" / "fr_dump_0").read_bytes())
    stuck = next(e for e in raw["entries"] if e["collective_seq_id"] == 6)
    stuck["retired"] = True
    raw["pg_status"]["0"]["last_completed_collective"] = 6
    import pickle

    dumps = [("dumps/fr_dump_0", pickle.dumps(raw, protocol=2)), *_dumps()[1:]]
    after_timeout = stuck["time_created_ns"] / 1e9 + stuck["timeout_ms"] / 1e3 + 1
    times = {**_times(), "fr_dump_0": after_timeout}
    report = triage_dumps(dumps, options=HangOptions(capture_times=times))
    by_rank = {r.rank: r for r in report.process_groups[0].ranks}
    assert by_rank[0].last_completed == 5
    assert report.candidates[0].ranks == [2]
