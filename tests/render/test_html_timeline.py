"""The HTML report's timeline agrees with the verdict: where and when the failure began."""

from __future__ import annotations

import re

import pytest

from denpex.models import Diagnosis
from denpex.render import render_html
from tests.conftest import REPO, diagnose_paths

CORPUS = REPO / "evals" / "corpus"
LANE = re.compile(r"<g class='lane( culprit)?' data-rank='(\d*)'>(.*?)</g>")
MARK_X = re.compile(r"(?:<circle class='(\w+)' cx='([\d.]+)'|<path class='(origin)' d='M([\d.]+))")


def _lanes(page: str) -> list[tuple[bool, str, list[tuple[str, float]]]]:
    lanes = []
    for culprit, rank, body in LANE.findall(page):
        marks = [(kind or origin, float(x or ox)) for kind, x, origin, ox in MARK_X.findall(body)]
        lanes.append((bool(culprit), rank, marks))
    return lanes


@pytest.fixture(scope="module")
def stuck() -> Diagnosis:
    # Rank 5 stalls; the others time out 10 ms later; rank 5's own first line is its SIGTERM.
    return diagnose_paths([str(CORPUS / "inject-collective-timeout-stuck-rank")])


def test_the_origin_is_drawn_on_the_culprits_lane_before_everything_else(stuck) -> None:
    lanes = _lanes(render_html(stuck))
    culprits = [(rank, marks) for culprit, rank, marks in lanes if culprit]
    assert [rank for rank, _ in culprits] == ["5"]
    origin = [x for kind, x in culprits[0][1] if kind == "origin"]
    others = [x for _, _, marks in lanes for kind, x in marks if kind != "origin"]
    assert len(origin) == 1 and origin[0] <= min(others)
    # Its SIGTERM is still drawn, as the culprit's later event, not as where it began.
    assert [kind for kind, _ in culprits[0][1]] == ["later", "origin"]


def test_rows_are_in_rank_order_with_unranked_lines_last_and_explained(stuck) -> None:
    page = render_html(stuck)
    ranks = [rank for _, rank, _ in _lanes(page)]
    assert ranks == ["0", "1", "2", "3", "4", "5", ""]
    assert "lines without a rank (launcher, scheduler)" in page
    assert "rank ?" not in page


def test_a_legend_names_every_kind_of_mark(stuck) -> None:
    page = render_html(stuck)
    legend = page[page.index("<ul class='legend'>") : page.index("</ul>")]
    for meaning in ("failure began", "first abnormal event", "later event", "originating rank"):
        assert meaning in legend


def test_ranks_are_grouped_by_host_with_each_hosts_clock_offset() -> None:
    diagnosis = diagnose_paths([str(CORPUS / "inject-ranks-two-node-sigkill")])
    page = render_html(diagnosis)
    assert diagnosis.timeline.clock_offsets_s
    for host, offset in diagnosis.timeline.clock_offsets_s.items():
        assert f"<td>{host}</td><td>{offset:+.3f} s</td>" in page
    headers = re.findall(r"font-weight='bold'>(host [^<]*)</text>", page)
    assert headers[0].startswith("host node0 (clock offset")
    assert len(headers) == len(set(headers)), "each host is one group"


def test_one_host_says_no_offset_was_applied(stuck) -> None:
    assert "Clock offsets: none applied (one host" in render_html(stuck)
