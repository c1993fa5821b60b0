"""Every presentation of one diagnosis: complete, escaped, and within its medium's limits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from denpex.models import Diagnosis
from denpex.render import RENDERERS, render_html, render_slack
from tests.conftest import BAD_SAMPLE, diagnose_paths


@pytest.fixture(scope="module")
def diagnosis() -> Diagnosis:
    return diagnose_paths([str(BAD_SAMPLE)])


@pytest.mark.parametrize("name", sorted(RENDERERS))
def test_every_format_names_the_cause_and_the_rank(name: str, diagnosis: Diagnosis) -> None:
    output = RENDERERS[name](diagnosis)
    assert "IndexError" in output
    assert "data_preprocessing_error" in output


def test_html_draws_one_mark_per_rank_and_the_originating_event_in_red(
    diagnosis: Diagnosis,
) -> None:
    page = render_html(diagnosis)
    assert page.count("<circle class=") == len(
        [e for e in diagnosis.timeline.first_abnormal if e.time is not None]
    )
    assert "<path class='origin'" in page and "fill='#cf222e'" in page  # rank 3's IndexError


def test_html_escapes_whatever_the_logs_contain(tmp_path: Path) -> None:
    hostile = "[rank1]: ValueError: <script>alert('x')</script> & <img src=x onerror=y>\n"
    (tmp_path / "rank1.log").write_text(hostile)
    page = render_html(diagnose_paths([str(tmp_path)]))
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert" in page


def test_slack_blocks_are_valid_json_within_slack_limits(diagnosis: Diagnosis) -> None:
    message = json.loads(render_slack(diagnosis))
    assert message["blocks"][0]["type"] == "header"
    assert len(message["blocks"]) <= 50
    for block in message["blocks"]:
        if block["type"] == "section":
            assert len(block["text"]["text"]) <= 3000


@pytest.fixture(scope="module")
def two_withheld() -> Diagnosis:
    # Ranks 1 and 4 of 6 never called seq 6 (real Gloo dumps and logs, evals/hang/).
    case = Path(__file__).resolve().parents[2] / "evals" / "hang" / "withheld_several"
    return diagnose_paths([str(case / "dumps"), str(case / "logs")])


@pytest.mark.parametrize("name", sorted(RENDERERS))
def test_every_format_states_both_culprit_ranks(name: str, two_withheld: Diagnosis) -> None:
    top = two_withheld.root_causes[0]
    assert (top.originating_rank, top.originating_ranks) == (None, [1, 4])
    output = RENDERERS[name](two_withheld)
    if name == "json":
        assert json.loads(output)["root_causes"][0]["originating_ranks"] == [1, 4]
    else:
        assert "ranks 1, 4" in output


def test_slack_evidence_cut_to_fit_keeps_its_code_block_closed(tmp_path: Path) -> None:
    frames = "".join(
        f'[rank1]:   File "/opt/train/{"deep/" * 150}step{n}.py", line {n}, in step\n'
        for n in range(6)
    )
    (tmp_path / "rank1.log").write_text(
        "[rank1]: Traceback (most recent call last):\n" + frames + "[rank1]: ValueError: bad\n"
    )
    message = json.loads(render_slack(diagnose_paths([str(tmp_path)])))
    fenced = [
        b["text"]["text"] for b in message["blocks"] if "```" in b.get("text", {}).get("text", "")
    ]
    assert fenced, "the evidence is shown"
    for text in fenced:
        assert len(text) <= 3000
        assert text.count("```") == 2 and text.endswith("```")
        assert "…(cut)" in text
