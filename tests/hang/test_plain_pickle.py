"""The restricted unpickler reads real dumps and refuses everything else without running it."""

from __future__ import annotations

import io
import os
import pickle
import random
import subprocess

import pytest

from denpex.hang import plain_pickle
from denpex.hang.plain_pickle import (
    SAFE_TUPLE_OPCODES,
    PickleLimits,
    PickleRefused,
    PickleUnreadable,
    _PlainUnpickler,
    load_plain,
)
from tests.hang.conftest import EVALS


def _real_dump() -> bytes:
    return (EVALS / "withheld_one" / "dumps" / "fr_dump_0").read_bytes()


class _RunsShell:
    """What an attacker uploads: unpickling it with `pickle.loads` runs a shell command."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (self.command,))


class _RunsPopen:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[list[str]]]:
        return (subprocess.Popen, (["touch", self.marker],))


def test_a_real_torch_dump_loads_exactly_as_the_standard_unpickler_reads_it() -> None:
    data = _real_dump()
    assert load_plain(data) == pickle.loads(data)


@pytest.mark.parametrize("protocol", range(6))
def test_plain_data_of_every_protocol_loads(protocol: int) -> None:
    value = pickle.loads(_real_dump())
    assert load_plain(pickle.dumps(value, protocol=protocol)) == value


@pytest.mark.parametrize("protocol", range(6))
@pytest.mark.parametrize("payload", [_RunsShell, _RunsPopen])
def test_a_pickle_that_would_run_a_command_is_refused_and_nothing_runs(
    tmp_path, protocol: int, payload: type
) -> None:
    marker = tmp_path / "pwned"
    argument = f"touch {marker}" if payload is _RunsShell else str(marker)
    malicious = pickle.dumps({"version": "2.10", "entries": [payload(argument)]}, protocol)
    with pytest.raises(PickleRefused, match="refused"):
        load_plain(malicious)
    assert not marker.exists()


def test_the_payload_is_real_the_standard_unpickler_runs_it(tmp_path) -> None:
    marker = tmp_path / "pwned"
    pickle.loads(pickle.dumps(_RunsShell(f"touch {marker}"), protocol=2))
    assert marker.exists()


def test_the_refusal_names_the_callable_it_was_asked_to_load(tmp_path) -> None:
    malicious = pickle.dumps(_RunsShell(f"touch {tmp_path / 'x'}"), protocol=0)
    with pytest.raises(PickleRefused, match=r"GLOBAL (posix|nt)\.system"):
        load_plain(malicious)


def test_the_unpickler_itself_refuses_every_global_even_without_the_opcode_scan(tmp_path) -> None:
    marker = tmp_path / "pwned"
    malicious = pickle.dumps(_RunsShell(f"touch {marker}"), protocol=4)
    with pytest.raises(PickleRefused, match=r"asks to load (posix|nt)\.system"):
        _PlainUnpickler(io.BytesIO(malicious)).load()
    assert not marker.exists()


def test_a_persistent_id_is_refused() -> None:
    class WithPersistentId(pickle.Pickler):
        def persistent_id(self, obj: object) -> str | None:
            return "external" if obj == "secret" else None

    buffer = io.BytesIO()
    WithPersistentId(buffer, protocol=2).dump(["secret"])
    with pytest.raises(PickleRefused):
        load_plain(buffer.getvalue())


def test_a_dict_keyed_by_a_million_nested_tuples_is_refused_instead_of_crashing() -> None:
    # PROTO 2, EMPTY_DICT, NONE, TUPLE1 x 1e6, NONE, SETITEM, STOP: 1 MB. The standard C
    # unpickler hashes the key recursively and the process dies of SIGSEGV.
    bomb = b"\x80\x02}N" + b"\x85" * 1_000_000 + b"Ns."
    with pytest.raises(PickleRefused, match="tuple inside a tuple"):
        load_plain(bomb)


def test_few_enough_tuple_opcodes_load_without_the_scan_and_nested_tuples_are_still_refused(
    monkeypatch,
) -> None:
    # 900 tuple opcodes: hashing the key is safe, so the unpickler builds it; the walk after
    # loading refuses it as the scan would have, and the scan runs only to word the refusal.
    bomb = b"\x80\x02}N" + b"\x85" * 900 + b"Ns."
    assert bomb.count(b"\x85") <= SAFE_TUPLE_OPCODES
    scans: list[bytes] = []
    monkeypatch.setattr(plain_pickle, "_scan", scans.append)
    with pytest.raises(PickleRefused, match="tuple inside a tuple"):
        load_plain(bomb)
    assert scans == [bomb]  # once, after loading, for the message only


def test_a_real_dump_is_loaded_without_the_opcode_scan(monkeypatch) -> None:
    monkeypatch.setattr(plain_pickle, "_scan", lambda data: pytest.fail("scanned"))
    assert load_plain(_real_dump()) == pickle.loads(_real_dump())


@pytest.mark.parametrize("protocol", [4, 5])
def test_frozensets_and_read_only_buffers_are_refused_after_loading(protocol: int) -> None:
    with pytest.raises(PickleRefused, match="FROZENSET"):
        load_plain(pickle.dumps({"ranks": frozenset({1, 2})}, protocol=protocol))
    # READONLY_BUFFER turns the bytearray below it into a memoryview, a type no dump holds.
    view = b"\x80\x05\x96" + (3).to_bytes(8, "little") + b"abc\x98."
    assert type(pickle.loads(view)) is memoryview
    with pytest.raises(PickleRefused, match="READONLY_BUFFER"):
        load_plain(view)


def test_sets_are_refused_since_building_one_hashes_its_members() -> None:
    with pytest.raises(PickleRefused, match=r"EMPTY_SET|FROZENSET"):
        load_plain(pickle.dumps({"ranks": {1, 2}}, protocol=4))


def test_nesting_deeper_than_the_bound_is_unreadable() -> None:
    deep: list[object] = []
    for _ in range(40):
        deep = [deep]
    with pytest.raises(PickleUnreadable, match="deeper than 32"):
        load_plain(pickle.dumps(deep, protocol=2))
    assert load_plain(pickle.dumps(deep, protocol=2), PickleLimits(max_depth=64)) == deep


def test_a_pickle_over_the_size_bound_is_not_parsed() -> None:
    with pytest.raises(PickleUnreadable, match="over the 1024 bound"):
        load_plain(_real_dump(), PickleLimits(max_bytes=1024))


def test_every_truncation_of_a_real_dump_is_unreadable_never_a_crash() -> None:
    data = _real_dump()
    for cut in range(0, len(data) - 1, 7):
        with pytest.raises(PickleUnreadable):
            load_plain(data[:cut])


def test_corrupted_real_dumps_load_or_are_refused_cleanly() -> None:
    data = _real_dump()
    chance = random.Random(20261130)
    outcomes = {"loaded": 0, "refused": 0, "unreadable": 0}
    for _ in range(400):
        corrupt = bytearray(data)
        for _ in range(chance.randint(1, 8)):
            corrupt[chance.randrange(len(corrupt))] = chance.randrange(256)
        try:
            load_plain(bytes(corrupt))
            outcomes["loaded"] += 1
        except PickleRefused:
            outcomes["refused"] += 1
        except PickleUnreadable:
            outcomes["unreadable"] += 1
    assert outcomes["unreadable"] > 0
    assert sum(outcomes.values()) == 400
