"""Any input, however malformed, gives a diagnosis or one `InputError`: never another exception.

Hypothesis builds inputs of every kind denpex reads: log lines with every prefix it parses
(carrying numbers far past any real rank or pid), raw bytes, gzip, tar and zip archives
(nested, truncated), and Flight Recorder dumps as JSON and as pickles (hostile opcodes
included). The default profile runs a bounded number of cases in CI; `HYPOTHESIS_PROFILE=long`
runs the long campaign described in tests/fuzz/README.md.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import pickle
import tarfile
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from denpex.errors import InputError
from denpex.ingest.sources import InputLimits
from tests.conftest import diagnose_paths

# No example database: the tree stays clean, and every run draws new cases.
settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "long",
    max_examples=250_000,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

LIMITS = InputLimits(max_unpacked_bytes=4 * 1024 * 1024)

# Prefixes and messages as real programs print them; numbers are drawn separately.
PREFIXES = [
    "[rank{n}]: ",
    "[default{n}]:",
    "{n}: ",
    "gpu-00{n}:{n}:{n} [{n}] ",
    "[Rank {n}] ",
    "(VllmWorker rank={n} pid={n}) ",
    "2026-11-30T03:12:{n}.412Z stderr F ",
    "Nov 30 03:12:07 gpu-0{n} kernel: ",
    "",
]
MESSAGES = [
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "NCCL WARN NET/IB : Got completion from peer 10.0.0.{n}<{n}> with error 12, opcode {n}",
    "[PG ID 0 PG GUID 0(default_pg) Rank {n}] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum={n}, OpType=ALLREDUCE, NumelIn={n}, NumelOut={n}, Timeout(ms)=600000)",
    "NVRM: Xid (PCI:0000:3b:00): {n}, pid={n}, GPU has fallen off the bus.",
    "Out of memory: Killed process {n} (python) total-vm:{n}kB",
    "torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -{n}) local_rank: "
    "{n} (pid: {n}) of binary: /usr/bin/python",
    "  Process {n} terminated with exit code {n}",
    "step {n} loss 2.31 step_time {n}.0",
]
numbers = st.one_of(
    st.integers(0, 99), st.integers(0, 10**30).map(str), st.just("9" * 5000), st.just("-1")
)


@st.composite
def log_lines(draw: st.DrawFn) -> bytes:
    lines = []
    for _ in range(draw(st.integers(1, 12))):
        prefix = draw(st.sampled_from(PREFIXES))
        message = draw(st.sampled_from(MESSAGES))
        text = (prefix + message).replace("{n}", str(draw(numbers)))
        lines.append(text.encode())
    noise = draw(st.binary(max_size=200))
    return b"\n".join(lines) + draw(st.sampled_from([b"\n", b"", b"\r\n"])) + noise


def _tar(members: dict[str, bytes], compress: bool) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    # gzip's header holds a time unless told otherwise; a time inside a nested archive changes
    # the outer one's compressed length, and Hypothesis then sees the same draws build different
    # archives (FlakyStrategyDefinition after 500,000 cases of the long campaign).
    return gzip.compress(buffer.getvalue(), mtime=0) if compress else buffer.getvalue()


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


member_names = st.sampled_from(
    [
        "rank0.log",
        "rank3.log",
        "../../etc/passwd",
        "/abs/rank1.log",
        "node01/worker-2.log",
        "fr_trace_rank_1",
        "fr_dump_" + "7" * 40,
        "attempt_0/3/stderr.log",
        "a" * 300,
    ]
)


@st.composite
def archives(draw: st.DrawFn) -> bytes:
    members = draw(st.dictionaries(member_names, log_lines(), min_size=1, max_size=4))
    kind = draw(st.sampled_from(["tar", "tar.gz", "zip", "gz", "nested"]))
    if kind == "tar":
        data = _tar(members, compress=False)
    elif kind == "tar.gz":
        data = _tar(members, compress=True)
    elif kind == "zip":
        data = _zip(members)
    elif kind == "gz":
        data = gzip.compress(next(iter(members.values())), mtime=0)
    else:
        data = _tar({"inner.tar.gz": _tar(members, compress=True)}, compress=True)
    cut = draw(st.one_of(st.none(), st.integers(0, max(0, len(data) - 1))))
    return data if cut is None else data[:cut]  # a truncated archive too


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=20)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=10), inner, max_size=5)
    ),
    max_leaves=30,
)


@st.composite
def dumps(draw: st.DrawFn) -> bytes:
    entry = {
        "record_id": draw(json_values),
        "pg_id": draw(st.one_of(st.integers(-5, 10**20), json_values)),
        "collective_seq_id": draw(st.one_of(st.integers(-1, 10**20), json_values)),
        "profiling_name": draw(st.sampled_from(["gloo:all_reduce", "nccl:all_gather", ""])),
        "input_sizes": draw(json_values),
        "state": draw(st.sampled_from(["scheduled", "started", "completed", 7])),
        "time_created_ns": draw(st.one_of(st.integers(0, 2**70), json_values)),
    }
    document = {
        "version": draw(st.sampled_from(["2.10", "1.5", "x", 3])),
        "pg_config": draw(json_values),
        "pg_status": draw(json_values),
        "entries": draw(st.lists(st.just(entry), max_size=20)),
    }
    if draw(st.booleans()):
        return json.dumps(document, default=str).encode()
    data = pickle.dumps(document, protocol=draw(st.integers(2, 5)))
    splice = draw(st.binary(max_size=16))  # hostile or broken opcodes inside the pickle
    at = draw(st.integers(0, len(data)))
    return data[:at] + splice + data[at:]


def _diagnose_or_input_error(folder: Path) -> None:
    # InputError is one clear line on the CLI; any other exception fails the test.
    with contextlib.suppress(InputError):
        diagnose_paths([str(folder)], limits=LIMITS)


@pytest.mark.parametrize(
    "strategy", [log_lines(), st.binary(max_size=2000)], ids=["lines", "bytes"]
)
def test_any_log_gives_a_diagnosis_or_an_input_error(tmp_path_factory, strategy) -> None:
    @given(strategy)
    def check(data: bytes) -> None:
        folder = tmp_path_factory.mktemp("log")
        (folder / "rank1.log").write_bytes(data)
        _diagnose_or_input_error(folder)

    check()


@given(archives())
def test_any_archive_gives_a_diagnosis_or_an_input_error(tmp_path_factory, data: bytes) -> None:
    folder = tmp_path_factory.mktemp("archive")
    (folder / "job.tar.gz").write_bytes(data)
    _diagnose_or_input_error(folder)


DUMP_NAMES = ["fr_trace_rank_2", "fr_dump_30000000", "fr_dump_" + "9" * 30, "fr_trace_rank_0.json"]


@given(dumps(), st.sampled_from(DUMP_NAMES))
# Found by this test: a time no calendar holds (year 10000) once raised from the hang evidence.
@example(
    b'{"version": "2.10", "pg_config": null, "pg_status": null, "entries": [{"record_id": null, '
    b'"pg_id": 0, "collective_seq_id": 0, "profiling_name": "gloo:all_reduce", "input_sizes": '
    b'null, "state": "scheduled", "time_created_ns": 253402300799999984742}]}',
    "fr_trace_rank_2",
)
def test_any_flight_recorder_dump_gives_a_diagnosis_or_an_input_error(
    tmp_path_factory, data: bytes, name: str
) -> None:
    folder = tmp_path_factory.mktemp("dump")
    (folder / name).write_bytes(data)
    (folder / "rank1.log").write_bytes(b"[rank1]: RuntimeError: boom\n")
    _diagnose_or_input_error(folder)
