"""A root cause that rests only on a tentative catalog signature (generated from an emitter's
source, unclear class) never outranks a hand-written signature's root cause, even when earlier.

The NCCL line is rendered from NCCL's proxy.cc format (rules/nccl_cat); the rank-3 line is
the real one from examples/torchrun-bad-sample.
"""

from __future__ import annotations

from dataclasses import replace

from denpex.match.scan import Matcher
from denpex.reason.hypotheses import form_hypotheses

NCCL_PROXY = (
    "gpu-017:20315:20402 [3] proxy.cc:1816 NCCL WARN [Proxy service] Too many connections (12 max)"
)
OOM_KILL = (
    "Nov 30 06:34:25 gpu-017 kernel: Out of memory: Killed process 20315 (python) "
    "total-vm:183040584kB, anon-rss:121675260kB, file-rss:0kB, shmem-rss:0kB, UID:0 "
    "pgtables:243140kB oom_score_adj:0"
)


def _timed(matcher: Matcher, line: str, time: float):
    (match,) = [m for m in matcher.scan_text(line) if m.role.value == "root_cause"]
    return replace(match, event=replace(match.event, time=time))


def test_an_earlier_tentative_catalog_root_ranks_below_a_hand_written_root(
    matcher: Matcher,
) -> None:
    catalog = _timed(matcher, NCCL_PROXY, 100.0)
    hand = _timed(matcher, OOM_KILL, 130.0)
    assert catalog.signature.tentative and not hand.signature.generated
    ranked = form_hypotheses([catalog, hand])
    assert [h.failure_class for h in ranked] == ["host_oom", "fd_or_process_limit"]


def test_a_tentative_catalog_root_alone_still_names_its_class(matcher: Matcher) -> None:
    ranked = form_hypotheses([_timed(matcher, NCCL_PROXY, 100.0)])
    assert [h.failure_class for h in ranked] == ["fd_or_process_limit"]
