"""A whole input's progress is read with bounded work: its first and last lines, every line
printing NaN or Inf, and a uniform sample between them whose stride grows with the input."""

from __future__ import annotations

from denpex.ingest.attribution import attribution_from_path
from denpex.ingest.lines import SourceContext
from denpex.ingest.reader import Chunk
from denpex.progress.series import (
    HEAD_RECORDS,
    SAMPLED_RECORDS,
    TAIL_RECORDS,
    ProgressReader,
    ProgressScanner,
    build_series,
)


def step_line(step: int, loss: str) -> str:
    # Python logging, as a training script prints it every step.
    return f"2026-11-03 02:00:{step % 60:02d},000 INFO train: step {step} loss {loss} lr 3.0e-04"


def read(lines: list[str], chunk_lines: int = 10_000) -> ProgressReader:
    context = SourceContext(
        name="rank0.log", who=attribution_from_path("rank0.log"), default_year=2026
    )
    reader = ProgressReader(ProgressScanner("re"), context)
    for first in range(0, len(lines), chunk_lines):
        data = ("\n".join(lines[first : first + chunk_lines]) + "\n").encode()
        reader.read(Chunk(data, 0, first + 1, 0))
    return reader


def test_a_short_run_keeps_every_progress_line() -> None:
    lines = [step_line(s, "2.5") for s in range(HEAD_RECORDS + SAMPLED_RECORDS)]
    reader = read(lines)
    assert reader.stride == 1
    assert [r.point.step for r in reader.records()] == list(range(len(lines)))


def test_a_long_run_is_sampled_within_bounds_keeping_its_head_tail_and_non_finite_lines() -> None:
    steps = 200_000
    lines = [step_line(s, "nan" if s == 123_457 else "2.5") for s in range(steps)]
    reader = read(lines)
    kept = reader.records()
    assert reader.stride > 1 and reader.seen == steps
    assert len(kept) <= HEAD_RECORDS + SAMPLED_RECORDS + TAIL_RECORDS + 1
    found = [r.point.step for r in kept]
    assert found == sorted(found), "in the order printed"
    assert found[:HEAD_RECORDS] == list(range(HEAD_RECORDS))
    assert found[-TAIL_RECORDS:] == list(range(steps - TAIL_RECORDS, steps))
    assert 123_457 in found, "a NaN line is never sampled away"
    middle = [s for s in found if HEAD_RECORDS <= s < steps - TAIL_RECORDS and s != 123_457]
    assert {s % reader.stride for s in middle} == {0}, "a uniform sample, one stride"
    assert len(middle) >= SAMPLED_RECORDS // 2, "the sample spans the run"
    assert [r.line for r in kept[:3]] == [1, 2, 3]


def test_ranks_printing_the_same_lines_keep_the_same_steps() -> None:
    # Replicas' values are compared step by step: sampling must not pick different steps.
    rank0 = read([step_line(s, "2.5") for s in range(50_000)], chunk_lines=7_000)
    rank1 = read([step_line(s, "2.5") for s in range(50_000)], chunk_lines=11_000)
    assert [r.point.step for r in rank0.records()] == [r.point.step for r in rank1.records()]


def test_the_sample_makes_a_step_time_series() -> None:
    reader = read([step_line(s, "2.5") for s in range(30_000)])
    (series,) = build_series(reader.records())
    assert len(series.step_times()) > SAMPLED_RECORDS // 2
