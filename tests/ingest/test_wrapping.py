"""A log pasted from a terminal or a console library comes wrapped at the window's width; its
lines are put back together before any signature reads them, and nothing else is joined."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from denpex.ingest import wrapping
from denpex.ingest.wrapping import Unwrapped, Wrap, wrap_of
from tests.conftest import diagnose_paths, write_job

FIXTURES = Path(__file__).parent / "fixtures"
# Real (public issue meta-pytorch/torchtune#1165): three ranks' watchdog timeouts copied out of a
# terminal 183 columns wide, each cut after "Timeo".
TERMINAL_CUT = FIXTURES / "torchtune-1165-terminal-cut-at-183.log"
# Real (public issue deepspeedai/DeepSpeed#3916): rich's traceback panel, 80 columns, with the
# exception message broken between words above it.
CONSOLE_BROKEN = FIXTURES / "deepspeed-3916-rich-broken-at-80.log"
# Real (public issue volcano-sh/kthena#487): kubectl tables, whose rows are as long as each other.
KUBECTL_TABLE = FIXTURES / "kthena-487-kubectl-table.log"


def _unwrapped(data: bytes) -> tuple[bytes, Unwrapped]:
    wrap = wrap_of(data)
    assert wrap is not None
    stream = Unwrapped(io.BytesIO(data), wrap)
    return stream.read(), stream


def test_a_terminal_cut_is_found_with_its_width() -> None:
    assert wrap_of(TERMINAL_CUT.read_bytes()) == Wrap(183, cut=True)


def test_cut_pieces_are_joined_without_a_space() -> None:
    text, stream = _unwrapped(TERMINAL_CUT.read_bytes())
    assert stream.joins == 3
    assert b"NumelOut=524290048, Timeout(ms)=600000) ran for 600055 milliseconds" in text
    assert text.count(b"\n") == TERMINAL_CUT.read_bytes().count(b"\n") - 3


def test_a_console_break_between_words_is_joined_with_the_space_it_took() -> None:
    assert wrap_of(CONSOLE_BROKEN.read_bytes()) == Wrap(80, cut=False)
    text, _ = _unwrapped(CONSOLE_BROKEN.read_bytes())
    assert b"(errno: 98 - Address already in use). The server socket" in text


def test_panel_rows_and_table_rows_stay_apart() -> None:
    text, _ = _unwrapped(CONSOLE_BROKEN.read_bytes())
    rows = [line for line in text.decode().splitlines() if line.startswith("│")]
    assert rows and all(len(row) == 80 and row.endswith("│") for row in rows)
    assert wrap_of(KUBECTL_TABLE.read_bytes()) is None


def test_repeated_lines_of_one_length_are_not_a_wrap() -> None:
    # Real (public issue microsoft/msccl#16): every rank prints the same long line.
    line = (
        "nccl-tests/build/all_reduce_perf: symbol lookup error: nccl-tests/build/"
        "all_reduce_perf: undefined symbol: ncclRedOpCreatePreMulSum\n"
    )
    assert wrap_of((line * 5).encode()) is None


def test_joins_do_not_depend_on_where_reads_end(monkeypatch: pytest.MonkeyPatch) -> None:
    data = TERMINAL_CUT.read_bytes()
    whole, _ = _unwrapped(data)
    monkeypatch.setattr(wrapping, "_BLOCK", 7)
    stream = Unwrapped(io.BytesIO(data), Wrap(183, cut=True))
    pieces = []
    while chunk := stream.read(11):
        pieces.append(chunk)
    assert b"".join(pieces) == whole


def test_a_diagnosis_reads_the_joined_lines_and_says_it_joined_them(tmp_path: Path) -> None:
    job = write_job(tmp_path, {"job.log": TERMINAL_CUT.read_text()})
    diagnosis = diagnose_paths([str(job / "job.log")])
    top = diagnosis.root_causes[0]
    assert top.failure_class == "collective_timeout"
    assert any("SeqNum=15037" in e.text and "before timing out" in e.text for e in top.evidence)
    assert any("wrapped at 183 columns were joined back" in w for w in diagnosis.warnings)


def test_a_broken_rendezvous_message_is_read_as_one(tmp_path: Path) -> None:
    job = write_job(tmp_path, {"post.log": CONSOLE_BROKEN.read_text()})
    top = diagnose_paths([str(job / "post.log")]).root_causes[0]
    assert top.failure_class == "rendezvous_failure"


def test_a_line_longer_than_a_block_passes_through_in_bounded_pieces(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(wrapping, "_BLOCK", 64)
    monkeypatch.setattr(wrapping, "_LONGEST", 128)
    data = b"x" * 1000 + b"\n" + b"tail\n"
    stream = Unwrapped(io.BytesIO(data), Wrap(80, cut=True))
    largest = 0
    out = b""
    while chunk := stream.read(64):
        largest = max(largest, len(stream._out))
        out += chunk
    assert out == data
    assert largest <= 128 + 2 * 64
