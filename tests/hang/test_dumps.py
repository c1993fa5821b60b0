"""Reading Flight Recorder dumps: both formats torch writes, older versions, and bad files."""

from __future__ import annotations

import json
import pickle

import pytest

from denpex.hang.dumps import DumpError, rank_from_name, read_dump
from denpex.hang.plain_pickle import PickleLimits
from tests.hang.conftest import EVALS

CASE = EVALS / "withheld_one"


def _pickle(rank: int) -> bytes:
    return (CASE / "dumps" / f"fr_dump_{rank}").read_bytes()


def _json(rank: int) -> bytes:
    return (CASE / "dumps_json" / f"fr_dump_{rank}.json").read_bytes()


def test_a_real_gloo_pickle_reads_into_typed_entries() -> None:
    dump = read_dump("dumps/fr_dump_0", _pickle(0))
    assert (dump.rank, dump.format, dump.version) == (0, "pickle", "2.10")
    last = dump.entries[-1]
    assert last.group == "0" and last.group_desc == "default_pg"
    assert last.op == "gloo:all_reduce"
    assert last.input_sizes == ((4,),) and last.input_dtypes == ("Float",)
    assert last.state == "scheduled" and last.retired is False
    assert last.call_site is not None and "generate.py" in last.call_site
    assert not dump.tracks_state, "Gloo never records start or completion"


def test_the_json_dump_of_the_same_moment_reads_to_the_same_entries() -> None:
    from_pickle = read_dump("fr_dump_2", _pickle(2))
    from_json = read_dump("fr_dump_2.json", _json(2))
    assert from_json.format == "json" and from_json.rank == 2
    assert list(from_json.entries) == list(from_pickle.entries), "frames are not compared"
    assert all(e.call_site is None for e in from_json.entries), "JSON dumps hold no frames"
    assert from_json.status == from_pickle.status


def test_the_json_dumps_zero_for_unknown_times_and_string_counters_are_read_as_unknown_and_ints():
    dump = read_dump("fr_dump_0.json", _json(0))
    raw = json.loads(_json(0))
    assert raw["entries"][0]["time_discovered_started_ns"] == 0
    assert dump.entries[0].started_ns is None
    counter = raw["pg_status"]["0"]["last_completed_collective"]
    assert isinstance(counter, str)
    assert dump.status[0].last_completed == int(counter)


def test_glooS_unnamed_pg_config_is_set_aside_with_a_note() -> None:
    dump = read_dump("fr_dump_0", _pickle(0))
    recorded = pickle.loads(_pickle(0))["pg_config"]
    assert list(recorded) == [""] and recorded[""]["name"] == ""
    assert dump.configs == {}
    assert any("before it was named" in note for note in dump.notes)


def test_a_torch_2_2_dump_version_1_4_with_seq_id_and_integer_groups_is_read() -> None:
    # torch 2.2's NCCLTraceBuffer::dump wrote "1.4": `seq_id`, an integer `pg_id` and no
    # `process_group`; `pg_config` maps pg id to a list of ranks; no `pg_status`.
    current = pickle.loads(_pickle(0))
    old_entries = [
        {
            "record_id": e["record_id"],
            "pg_id": e["pg_id"],
            "seq_id": e["collective_seq_id"],
            "op_id": e["op_id"],
            "profiling_name": e["profiling_name"],
            "time_created_ns": e["time_created_ns"],
            "input_sizes": e["input_sizes"],
            "output_sizes": e["output_sizes"],
            "state": e["state"],
            "time_discovered_started_ns": None,
            "time_discovered_completed_ns": None,
            "retired": e["retired"],
            "frames": e["frames"],
        }
        for e in current["entries"]
    ]
    old = {"entries": old_entries, "version": "1.4", "pg_config": {0: [0, 1, 2, 3]}}
    dump = read_dump("nccl_trace_rank_0", pickle.dumps(old, protocol=2))
    assert [e.seq for e in dump.entries] == [e["collective_seq_id"] for e in current["entries"]]
    assert {e.group for e in dump.entries} == {"0"}
    assert dump.configs["0"].ranks == (0, 1, 2, 3)
    assert dump.status == {}


def test_a_2_7_dump_naming_its_library_nccl_version_is_read() -> None:
    current = pickle.loads(_pickle(1))
    current.pop("comm_lib_version")
    current["nccl_version"] = "2.21.5"
    current["version"] = "2.7"
    dump = read_dump("fr_dump_1", pickle.dumps(current, protocol=2))
    assert dump.comm_lib_version == "2.21.5" and dump.version == "2.7"


def test_a_newer_major_version_is_read_as_2_x_with_a_note() -> None:
    current = pickle.loads(_pickle(1))
    current["version"] = "3.0"
    dump = read_dump("fr_dump_1", pickle.dumps(current, protocol=2))
    assert dump.entries and any("newer than 2.x" in note for note in dump.notes)


def test_pg_config_ranks_written_as_text_are_parsed_never_evaluated() -> None:
    current = pickle.loads(_pickle(1))
    current["pg_config"] = {
        "0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2, 3]"},
        "1": {"name": "1", "desc": "tp", "ranks": "__import__('os').system('true')"},
    }
    dump = read_dump("fr_dump_1", pickle.dumps(current, protocol=2))
    assert dump.configs["0"].ranks == (0, 1, 2, 3)
    assert "1" not in dump.configs


@pytest.mark.parametrize(
    ("name", "rank"),
    [
        ("fr_dump_3", 3),
        ("/tmp/nccl_trace_rank_12", 12),
        ("trace_7.json", 7),
        ("node07/fr_dump_11.pkl", 11),
        ("rank5.pickle", 5),
        ("flight_recorder_dump", None),
    ],
)
def test_the_rank_comes_from_the_file_name_as_torch_writes_it(name: str, rank: int | None) -> None:
    assert rank_from_name(name) == rank


def test_the_host_comes_from_the_dumps_directory_when_it_names_one() -> None:
    assert read_dump("node07/fr_dump_0", _pickle(0)).host == "node07"
    assert read_dump("fr_dump_0", _pickle(0)).host is None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty file"),
        (b'{"step": 12, "loss": 0.5}', "not a Flight Recorder dump"),
        (b'{"version": "2.10", "entries": 5}', "'entries' is int, not a list"),
        (b'{"version": 2.1, "entries": []}', "is not 'major.minor'"),
        (b'{"version": "2.10", "entries": [1, 2]}', "none of its 2 entries is readable"),
        (b'{"version": "2.10", "entries": [', "not valid JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "neither a pickle nor JSON"),
        (b"{" + b'"a":[' * 100_000, "not valid JSON"),
        (b"\x00\x01binary garbage\xff", "neither a pickle nor JSON"),
        (b"\x80\x02}q\x00(X\x07\x00\x00\x00version", "truncated pickle"),
        (pickle.dumps([1, 2, 3], protocol=2), "not a Flight Recorder dump"),
    ],
)
def test_unusable_files_give_one_clear_error(data: bytes, message: str) -> None:
    with pytest.raises(DumpError, match=message) as raised:
        read_dump("fr_dump_0", data)
    assert str(raised.value).startswith("fr_dump_0: ")


def test_a_dump_over_the_size_bound_is_refused_before_parsing() -> None:
    with pytest.raises(DumpError, match="over the 100-byte dump bound"):
        read_dump("fr_dump_0", _pickle(0), PickleLimits(max_bytes=100))


def test_malformed_entries_are_left_out_and_counted() -> None:
    current = pickle.loads(_pickle(1))
    current["entries"].append({"record_id": 99, "profiling_name": 7})
    dump = read_dump("fr_dump_1", pickle.dumps(current, protocol=2))
    assert len(dump.entries) == len(current["entries"]) - 1
    assert any("1 of" in note and "malformed" in note for note in dump.notes)


def _empty_entries(count: int) -> dict[str, object]:
    """What an attacker sends: a valid dump header over entries that are empty dicts, each
    64 bytes of memory for 2 or 3 bytes of file."""
    return {"version": "2.0", "entries": [{} for _ in range(count)]}


@pytest.mark.parametrize(
    "data",
    [
        json.dumps(_empty_entries(5000)).encode(),
        pickle.dumps(_empty_entries(5000), protocol=2),
    ],
    ids=["json", "pickle"],
)
def test_a_dump_that_could_build_more_containers_than_the_bound_is_refused_unbuilt(
    data: bytes,
) -> None:
    with pytest.raises(DumpError, match=r"bound of 1000 \(the max_dump_containers limit\)"):
        read_dump("fr_dump_0", data, PickleLimits(max_containers=1000))


def test_real_dumps_read_well_within_a_container_bound_of_their_own_size() -> None:
    # A real dump counts about twice its containers in the bytes that open one; these hold
    # 47 to 65 containers in under 2 KB (pickle) or 3 KB (JSON).
    bound = PickleLimits(max_containers=300)
    for rank in range(4):
        assert read_dump(f"fr_dump_{rank}", _pickle(rank), bound).entries
        assert read_dump(f"fr_dump_{rank}.json", _json(rank), bound).entries


def test_a_json_dump_nested_deeper_than_the_bound_is_one_clear_error() -> None:
    deep = json.dumps({"version": "2.0", "entries": [[[[[[[[[[[]]]]]]]]]]]}).encode()
    with pytest.raises(DumpError, match="JSON nests deeper than 8 levels") as raised:
        read_dump("fr_dump_0.json", deep, PickleLimits(max_depth=8))
    assert str(raised.value).startswith("fr_dump_0.json: ")
