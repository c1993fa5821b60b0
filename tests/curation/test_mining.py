"""Drain3 templates become signature patterns with named captures."""

from __future__ import annotations

import re

from denpex.curation.mining import mine, template_pattern
from tests.curation.conftest import LMDEPLOY, MONKEYOCR

LINES = [LMDEPLOY.read_text().splitlines()[0], MONKEYOCR.read_text().splitlines()[-1]]


def test_lines_that_differ_in_their_numbers_share_one_template() -> None:
    (mined,) = mine(LINES)
    assert mined.template == (
        "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: <NUM>, "
        "Hardware limit: <NUM>. Reducing block sizes or `num_stages` may help."
    )
    assert mined.lines == tuple(LINES)


def test_each_variable_part_is_a_capture_named_after_the_words_before_it() -> None:
    (mined,) = mine(LINES)
    pattern = template_pattern(mined.template)
    assert pattern.captures == ("hardware_limit", "required")
    found = [re.search(pattern.regex, line, re.ASCII).groupdict() for line in LINES]
    assert found == [
        {"required": "131088", "hardware_limit": "101376"},
        {"required": "126978", "hardware_limit": "101376"},
    ]
    assert "Required: {required}, Hardware limit: {hardware_limit}." in pattern.title


def test_a_launcher_prefix_is_not_part_of_the_template() -> None:
    prefixed = [f"[default1]:[rank1]: {LINES[0]}", LINES[1]]
    (mined,) = mine(prefixed)
    assert mined.template.startswith("triton.runtime.errors.OutOfResources:")
    assert re.search(template_pattern(mined.template).regex, prefixed[0])
