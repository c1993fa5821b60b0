"""The causal-timeline excerpt and the query built from its first abnormal events."""

from __future__ import annotations

from denpex.evidence import EvidenceOptions, assemble
from denpex.hybrid.excerpt import build_excerpt, prioritised, query_templates
from denpex.hybrid.harvest import abnormal_lines
from tests.conftest import bundled_matcher
from tests.hybrid.support import case_inputs, observe


def test_lines_come_in_corrected_time_order_with_repeats_folded() -> None:
    excerpt = observe(case_inputs("stall-rank2")).excerpt
    times = [line.time for line in excerpt if line.time is not None]
    assert times == sorted(times)
    assert len({line.template for line in excerpt}) == len(excerpt)
    sigterm = next(line for line in excerpt if "(SIGTERM) received by PID" in line.text)
    assert sigterm.repeats == 2, "two ranks were terminated; one line stands for both"


def test_rule_matches_are_marked_and_generic_finds_are_abnormal() -> None:
    excerpt = observe(case_inputs("exc-keyerror")).excerpt
    root = next(line for line in excerpt if "KeyError: 'label'" in line.text)
    assert (root.role, root.signature_id, root.rank) == (
        "root_cause",
        "python.uncaught_exception",
        1,
    )
    # The generic exception reader names the line, not its cause: curation still mines it.
    assert root.fallback
    closed = next(line for line in excerpt if "Connection closed by peer" in line.text)
    assert (closed.signature_id, closed.fallback) == ("gloo.connection_closed_by_peer", False)
    failed = next(line for line in excerpt if line.text.endswith("train.py FAILED"))
    assert (failed.role, failed.signature_id) == ("abnormal", None)


def test_a_short_excerpt_keeps_the_root_cause_before_generic_lines() -> None:
    paths = case_inputs("exc-keyerror")
    evidence = assemble(paths, bundled_matcher(), EvidenceOptions(abnormal=abnormal_lines()))
    short = build_excerpt(evidence.timeline, list(evidence.abnormal), limit=2)
    assert len(short) == 2
    assert any(line.role == "root_cause" for line in short)
    assert all(line.role != "abnormal" for line in short)


def test_the_query_is_the_distinct_templates_of_the_first_abnormal_events() -> None:
    excerpt = observe(case_inputs("ckpt-size")).excerpt
    query = query_templates(excerpt, limit=3)
    assert len(query) == len(set(query)) <= 3
    chosen = prioritised(excerpt, 3)
    assert chosen == sorted(chosen)
    assert any("Error(s) in loading state_dict" in template for template in query)
