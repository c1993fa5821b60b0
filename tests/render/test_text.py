"""Text for a terminal: wrapped to its width with the indent kept, colour only when asked."""

from __future__ import annotations

import re

import pytest

from denpex.models import Diagnosis
from denpex.render import render_text
from tests.conftest import REPO, diagnose_paths

ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(scope="module")
def two_node() -> Diagnosis:
    return diagnose_paths([str(REPO / "evals" / "corpus" / "inject-ranks-two-node-sigkill")])


@pytest.mark.parametrize("width", [60, 80, 120])
def test_every_line_fits_the_width_and_keeps_its_indent(two_node: Diagnosis, width: int) -> None:
    lines = render_text(two_node, width=width).splitlines()
    assert max(len(line) for line in lines) <= width
    assert not any(line.endswith(" ") for line in lines)
    steps = [i for i, line in enumerate(lines) if line.startswith("  → ")]
    assert steps, "the next steps are shown"
    # A step's wrapped lines hang under its text, not under the arrow.
    after = lines[steps[0] + 1]
    assert after.startswith(("    ", "  → ", "  owner:"))


def test_without_a_width_log_lines_stay_whole(two_node: Diagnosis) -> None:
    text = render_text(two_node)
    for root in two_node.root_causes:
        for line in root.evidence:
            assert line.text in text


def test_colour_only_when_asked(two_node: Diagnosis) -> None:
    assert not ANSI.search(render_text(two_node, width=80))
    coloured = render_text(two_node, width=80, color=True)
    assert ANSI.search(coloured)
    assert max(len(ANSI.sub("", line)) for line in coloured.splitlines()) <= 80
