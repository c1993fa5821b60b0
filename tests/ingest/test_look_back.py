"""An untimed line takes its time from the lines around it, exactly as a full look-back would."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from denpex.events import Attribution
from denpex.ingest.lines import (
    LOOKAROUND_LINES,
    SourceContext,
    _inherited_stamp,
    _next_line_starts,
    _previous_line_starts,
    line_bounds,
    split,
    stamp_of_line,
)
from denpex.ingest.timestamps import NO_STAMP, Stamp

# Lines as jobs print them: timed or not, by one rank, another, a pid-tagged NCCL thread or
# nobody in particular.
SHAPES = [
    "2026-11-03 02:59:{s:02d},123 INFO step {s} loss 0.5",
    "[rank1]: 2026-11-03 03:00:{s:02d} rank one is timed",
    "[rank1]: rank one says something untimed",
    "[rank2]: 2026-11-03 03:01:{s:02d} rank two is timed",
    "[rank2]: rank two says something untimed",
    "gpu-000:40001:40009 [1] NCCL INFO TUNER/Plugin: Failed to find ncclTunerPlugin_v4 symbol.",
    "gpu-000:40002:40009 [2] NCCL INFO Connected all rings",
    "an untimed line from nobody in particular",
]


def _full_look_back(data: bytes, start: int, who: Attribution, context: SourceContext) -> Stamp:
    """The look-back read line by line, every time: what `_inherited_stamp` must equal."""
    fallback = NO_STAMP
    for previous in _previous_line_starts(data, start, LOOKAROUND_LINES):
        prefixed = split(data[slice(*line_bounds(data, previous))], context)
        stamp = stamp_of_line(prefixed, context.default_year)
        if not stamp.found:
            continue
        if (prefixed.who.rank, prefixed.who.local_rank, prefixed.who.pid) == (
            who.rank,
            who.local_rank,
            who.pid,
        ):
            return stamp
        if not fallback.found:
            fallback = stamp
    if fallback.found:
        return fallback
    for following in _next_line_starts(data, start, LOOKAROUND_LINES // 4):
        stamp = stamp_of_line(
            split(data[slice(*line_bounds(data, following))], context), context.default_year
        )
        if stamp.found:
            return stamp
    return NO_STAMP


TIMED = [0, 1, 3]
UNTIMED = [2, 4, 5, 6, 7]


@st.composite
def logs(draw: st.DrawFn) -> list[int]:
    """Mostly untimed lines, the timed ones few and far between: look-backs reach their 200-line
    limit, and what the previous look-back found falls in and out of reach."""
    size = draw(st.integers(1, 700))
    timed_every = draw(st.integers(1, 300))
    return [
        draw(st.sampled_from(TIMED)) if n % timed_every == 0 else draw(st.sampled_from(UNTIMED))
        for n in range(size)
    ]


@settings(max_examples=60, deadline=None)
@given(
    shapes=logs(),
    passes=st.lists(st.lists(st.integers(0, 699), max_size=80), min_size=1, max_size=3),
)
def test_a_look_back_that_reuses_the_previous_one_finds_what_reading_every_line_finds(
    shapes: list[int], passes: list[list[int]]
) -> None:
    # Each pass looks back from lines in increasing order, as a scan of one pattern group does;
    # a later pass starts again from the top, as the next group's scan of the same chunk does.
    _assert_as_full_look_back(shapes, passes)


@pytest.mark.parametrize("distance", [198, 199, 200, 201, 202])
@pytest.mark.parametrize("gap", [1, 2, 5])
def test_the_200_line_reach_holds_across_consecutive_look_backs(distance: int, gap: int) -> None:
    # Rank 1's timed line `distance` lines above the second of two untimed rank-1 lines `gap`
    # apart, another rank's timed line at the very top as the fallback.
    shapes = [3, *[7] * 300, 1, *[6] * (distance - 1 - gap), 2, *[6] * (gap - 1), 2, *[6] * 5]
    lines = len(shapes)
    _assert_as_full_look_back(shapes, [[lines - 6 - gap, lines - 6]])


def _assert_as_full_look_back(shapes: list[int], passes: list[list[int]]) -> None:
    data = "\n".join(SHAPES[i].format(s=n % 60) for n, i in enumerate(shapes)).encode() + b"\n"
    starts = [0, *(i + 1 for i, byte in enumerate(data[:-1]) if byte == ord("\n"))]
    context = SourceContext(name="rank1.log", who=Attribution(), default_year=2026)
    reference = SourceContext(name="rank1.log", who=Attribution(), default_year=2026)
    for chosen in passes:
        for start in sorted(starts[i % len(starts)] for i in chosen):
            prefixed = split(data[slice(*line_bounds(data, start))], context)
            if stamp_of_line(prefixed, context.default_year).found:
                continue  # only an untimed line looks back
            assert _inherited_stamp(data, start, prefixed.who, context) == _full_look_back(
                data, start, prefixed.who, reference
            )
