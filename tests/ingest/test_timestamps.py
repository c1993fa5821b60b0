"""Timestamps in the formats distributed jobs print, read as UTC on the printing host's clock."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from denpex.ingest.timestamps import parse_stamp


def _epoch(*parts: int, micro: int = 0) -> float:
    return datetime(*parts, microsecond=micro, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (
            "2026-11-30 06:21:04,683 INFO step 0 loss 0.3679",
            _epoch(2026, 11, 30, 6, 21, 4, micro=683000),
        ),
        ("2026-11-03T03:12:07.412Z rank17 NCCL WARN", _epoch(2026, 11, 3, 3, 12, 7, micro=412000)),
        ("2026-11-03T05:12:07.412+02:00 shifted zone", _epoch(2026, 11, 3, 3, 12, 7, micro=412000)),
        ("  time      : 2026-11-30_06:34:28", _epoch(2026, 11, 30, 6, 34, 28)),
        (
            "W1130 06:20:54.719000 5227 torch/distributed/run.py:874] ",
            _epoch(2026, 11, 30, 6, 20, 54, micro=719000),
        ),
        (
            "[E1218 20:27:21.426415 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog",
            _epoch(2026, 12, 18, 20, 27, 21, micro=426415),
        ),
        (
            "Nov 30 06:21:04 gpu-042 kernel: NVRM: Xid (PCI:0000:06:00): 79",
            _epoch(2026, 11, 30, 6, 21, 4),
        ),
        (
            "[Mon Nov 30 06:21:04 2026] NVRM: Xid (PCI:0000:06:00): 79",
            _epoch(2026, 11, 30, 6, 21, 4),
        ),
    ],
)
def test_absolute_formats(message: str, expected: float) -> None:
    stamp = parse_stamp(message, default_year=2026)
    assert stamp.epoch == pytest.approx(expected)


def test_glog_and_syslog_take_the_year_they_are_given() -> None:
    assert parse_stamp("E1218 20:27:21.426415 1 x.cpp:1] y", default_year=2024).year_inferred
    assert parse_stamp("E1218 20:27:21.426415 1 x.cpp:1] y", 2024).epoch == pytest.approx(
        _epoch(2024, 12, 18, 20, 27, 21, micro=426415)
    )


def test_c10_s_own_head_does_not_pad_the_month() -> None:
    # Real (pytorch/pytorch#134006, torch 2.4): "[E820 ..." is 20 August, nanoseconds after.
    line = "[E820 11:47:24.069865760 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught"
    stamp = parse_stamp(line, 2024)
    assert stamp.epoch == pytest.approx(_epoch(2024, 8, 20, 11, 47, 24, micro=69866), abs=1e-3)
    assert parse_stamp("[E1218 20:27:21.426415 x.cpp:1] y", 2024).epoch == pytest.approx(
        _epoch(2024, 12, 18, 20, 27, 21, micro=426415)
    )


def test_vllm_s_month_day_format_takes_the_year_it_is_given() -> None:
    # Real (vllm-project/vllm issues): "%(levelname)s %(asctime)s" with datefmt "%m-%d %H:%M:%S".
    stamp = parse_stamp("ERROR 02-17 14:48:01 multiproc_executor.py:374] ValueError: x", 2025)
    assert stamp.year_inferred
    assert stamp.epoch == pytest.approx(_epoch(2025, 2, 17, 14, 48, 1))


def test_dmesg_seconds_since_boot_are_kept_apart_from_wall_time() -> None:
    stamp = parse_stamp("[ 8123.456789] Memory cgroup out of memory: Killed process 48213", 2026)
    assert stamp.epoch is None
    assert stamp.boot_seconds == pytest.approx(8123.456789)


@pytest.mark.parametrize(
    "message",
    ["Traceback (most recent call last):", "step 5 finished in 2026 ms", "2026-02-30 10:00:00 bad"],
)
def test_lines_without_a_valid_timestamp_have_none(message: str) -> None:
    assert not parse_stamp(message, 2026).found
