"""The HTML report in headless Chromium: its timeline agrees with the verdict, at any size."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from denpex.models import ClockOffset, Diagnosis, FirstAbnormal
from denpex.render import render_html
from tests.browser.conftest import Watched
from tests.conftest import REPO, diagnose_paths

pytestmark = pytest.mark.slow

STUCK = REPO / "evals" / "corpus" / "inject-collective-timeout-stuck-rank"
# Rank 5 stalls; ranks 0-4 time out 10 ms after it began; rank 5's own first abnormal line is
# its SIGTERM, 20 s later. The verdict names rank 5, first.


@pytest.fixture(scope="module")
def stuck() -> Diagnosis:
    return diagnose_paths([str(STUCK)])


def _marks(watched: Watched) -> list[dict]:
    return watched.page.evaluate(
        """() => Array.from(document.querySelectorAll('g.lane')).map((lane) => ({
            rank: lane.dataset.rank,
            culprit: lane.classList.contains('culprit'),
            band: getComputedStyle(lane.querySelector('rect.band')).fill,
            marks: Array.from(lane.querySelectorAll('.origin, circle')).map((mark) => ({
                kind: mark.getAttribute('class'),
                x: mark.getBoundingClientRect().left + mark.getBoundingClientRect().width / 2,
            })),
        }))"""
    )


def test_the_culprits_lane_is_highlighted_and_its_origin_drawn_first(
    watched: Watched, stuck: Diagnosis
) -> None:
    assert stuck.root_causes[0].originating_rank == 5
    watched.page.set_content(render_html(stuck))
    lanes = _marks(watched)
    culprits = [lane for lane in lanes if lane["culprit"]]
    assert [lane["rank"] for lane in culprits] == ["5"]
    assert culprits[0]["band"] != lanes[0]["band"], "the culprit's lane is coloured"
    origin = next(m for m in culprits[0]["marks"] if m["kind"] == "origin")
    others = [m["x"] for lane in lanes for m in lane["marks"] if m["kind"] != "origin"]
    assert origin["x"] <= min(others), "the originating event is drawn where it happened: first"
    ranked = [int(lane["rank"]) for lane in lanes if lane["rank"]]
    assert ranked == sorted(ranked), "rows in rank order"
    assert watched.page.locator(".legend li").count() == 4
    assert "Clock offsets" in watched.page.inner_text("body")
    assert watched.errors == [] and watched.outside == []


def _at_scale(base: Diagnosis, ranks: int, per_host: int) -> Diagnosis:
    """`base` as if it ran on `ranks` ranks, `per_host` to a host, culprit rank 2741."""
    root = base.root_causes[0]
    began = root.first_seen
    assert began is not None
    hosts = [f"node{index:04d}" for index in range(ranks // per_host)]
    entries = [
        FirstAbnormal(
            rank=rank,
            host=hosts[rank // per_host],
            time=began + timedelta(milliseconds=10 + (rank % 97)),
            signature_id="gloo.timeout",
        )
        for rank in range(ranks)
        if rank != 2741
    ]
    culprit = root.model_copy(
        update={
            "originating_rank": 2741,
            "originating_ranks": [2741],
            "originating_host": hosts[2741 // per_host],
        }
    )
    timeline = base.timeline.model_copy(
        update={
            "ranks_seen": ranks,
            "hosts_seen": len(hosts),
            "first_abnormal": entries,
            "clock_offsets_s": {host: 0.001 * (i % 7) for i, host in enumerate(hosts)},
            "clock_estimates": {
                host: ClockOffset(offset_s=0.001 * (i % 7), uncertainty_s=0.05, anchors=3)
                for i, host in enumerate(hosts)
            },
        }
    )
    return base.model_copy(update={"timeline": timeline, "root_causes": [culprit]})


def test_four_thousand_ranks_stay_responsive(watched: Watched, stuck: Diagnosis) -> None:
    page = render_html(_at_scale(stuck, 4096, 8))
    started = time.perf_counter()
    watched.page.set_content(page, wait_until="load")
    loaded = time.perf_counter() - started
    scrolled = watched.page.evaluate(
        """() => new Promise((done) => {
            const start = performance.now();
            document.querySelector('g.lane.culprit').scrollIntoView({block: 'center'});
            requestAnimationFrame(() => requestAnimationFrame(
                () => done(performance.now() - start)));
        })"""
    )
    lanes = watched.page.locator("g.lane").count()
    culprit = watched.page.locator("g.lane.culprit")
    print(
        f"4096 ranks: {len(page) / 1e6:.2f} MB, loaded in {loaded:.2f} s, "
        f"scrolled to the culprit in {scrolled:.0f} ms"
    )
    assert lanes == 4096
    assert culprit.get_attribute("data-rank") == "2741" and culprit.is_visible()
    assert loaded < 10 and scrolled < 1000
    assert watched.errors == [] and watched.outside == []
