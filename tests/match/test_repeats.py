"""A line repeated hundreds of times is counted, and the first and last few are kept whole:
timed by the timestamp printed around them, with their traceback, like any matched line."""

from __future__ import annotations

from pathlib import Path

from denpex.match.scan import KEEP_EACH_END, Matcher
from denpex.pipeline import scan_inputs

PORT_ERROR = "gpu-001:1234:1290 [0] NCCL WARN NET/IB : Got async event : port error"


def test_repeated_untimed_lines_are_counted_and_the_kept_ones_inherit_their_time(
    tmp_path: Path, matcher: Matcher
) -> None:
    lines = ["2026-11-03 02:00:00,000 INFO train: step 1 loss 2.5"]
    lines += [PORT_ERROR] * 150
    lines += ["2026-11-03 02:05:00,000 INFO train: step 2 loss 2.4"]
    lines += [PORT_ERROR] * 150
    (tmp_path / "rank0.log").write_text("\n".join(lines) + "\n")
    scanned = scan_inputs([str(tmp_path)], matcher)
    kept = [m for m in scanned.matches if m.signature_id == "nccl.ib_port_error_event"]
    assert len(kept) == 2 * KEEP_EACH_END
    (dropped,) = [n for (sid, _), n in scanned.inputs[0].dropped.items() if "port_error" in sid]
    assert dropped == 300 - 2 * KEEP_EACH_END
    first, last = kept[0].event, kept[-1].event
    assert first.line == 2 and first.time_inferred
    assert last.line == 302 and last.time_inferred
    assert last.time - first.time == 300.0, "each from the stamp printed above it"
