"""Progress formats are data: every example in formats.yaml is read as its `expect` says."""

from __future__ import annotations

import math

import pytest

from denpex.progress.formats import formats, parse_message, parse_probe

EXAMPLES = [
    pytest.param(fmt.spec.id, example["text"], example["expect"], id=f"{fmt.spec.id}-{i}")
    for fmt in formats()
    for i, example in enumerate(fmt.spec.examples)
]
NEAR_MISSES = [text for fmt in formats() for text in fmt.spec.near_misses]


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9)


@pytest.mark.parametrize(("format_id", "text", "expect"), EXAMPLES)
def test_each_example_reads_as_expected(format_id: str, text: str, expect: dict) -> None:
    point = parse_message(text)
    assert point is not None and point.format_id == format_id
    for name, value in expect.items():
        if name == "step":
            assert point.step == value
        elif name == "rank":
            assert point.rank == value
        else:
            assert _same(point.values[name], float(value)), name


def test_every_format_has_an_example() -> None:
    assert all(fmt.spec.examples for fmt in formats())


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_misses_are_not_progress(text: str) -> None:
    assert parse_message(text) is None


def test_evaluation_and_summary_dicts_of_the_trainer_are_not_training_steps() -> None:
    summary = (
        "{'train_runtime': 812.4, 'train_samples_per_second': 39.4, "
        "'train_steps_per_second': 1.23, 'train_loss': 1.8412, 'epoch': 3.0}"
    )
    assert parse_message(summary) is None
    assert parse_message("{'eval_loss': 1.912, 'eval_runtime': 12.1, 'epoch': 1.0}") is None


def test_torchtitan_validation_lines_are_not_training_steps() -> None:
    line = "[titan] 2025-06-11 14:12:01,002 - root - INFO - validate step: 500  loss: 2.9112"
    assert parse_message(line) is None


def test_a_probe_line_keeps_layer_and_checksum() -> None:
    line = (
        '2026-12-01 15:33:54,583 INFO train: {"denpex_probe": 1, "step": 30, "rank": 1, '
        '"layer": "2.weight", "delta_norm": 0.0123, "norm": 4.56, "checksum": "9f2c0a11d3e4b5c6"}'
    )
    point = parse_probe(line)
    assert point is not None
    assert (point.step, point.rank, point.layer, point.checksum) == (
        30,
        1,
        "2.weight",
        "9f2c0a11d3e4b5c6",
    )
    assert point.values == {"delta_norm": 0.0123, "norm": 4.56}
    assert parse_probe('{"denpex_probe": 1, "step": "x"}') is None
