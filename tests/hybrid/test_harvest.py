"""The best effort's share of the one read: digests, and the abnormal lines no rule matched."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

from denpex.evidence import EvidenceOptions, assemble
from denpex.hybrid.harvest import abnormal_lines, is_below_error
from denpex.match.scan import Matcher
from tests.conftest import bundled_matcher
from tests.hybrid.support import case_inputs

_WITH_LINES = EvidenceOptions(abnormal=abnormal_lines(), digests=True)


def _matcher() -> Matcher:
    return bundled_matcher()


def test_every_input_is_digested_even_one_skipped_as_binary() -> None:
    # worker-sigsegv's rank 0 log holds a NUL byte printed by the DataLoader's crash handler.
    paths = case_inputs("worker-sigsegv")
    evidence = assemble(paths, _matcher(), _WITH_LINES)
    assert set(evidence.digests) == set(paths)
    for path in paths:
        assert evidence.digests[path] == hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_lines_the_rules_did_not_match_are_found_and_matched_ones_skipped() -> None:
    paths = case_inputs("killed-rank1")
    evidence = assemble(paths, _matcher(), _WITH_LINES)
    texts = [m.event.text for m in evidence.abnormal]
    assert any("traceback : Signal 9 (SIGKILL) received by PID" in t for t in texts)
    assert any(t.endswith("train.py FAILED") for t in texts)
    explained = {(m.event.source, m.event.line) for s in evidence.inputs for m in s.matches}
    found = {(m.event.source, m.event.line) for m in evidence.abnormal}
    assert explained and not found & explained
    assert len(found) == len(texts), "one abnormal line is listed once"


def test_without_the_best_effort_nothing_is_hashed_or_harvested() -> None:
    evidence = assemble(case_inputs("killed-rank1"), _matcher())
    assert evidence.digests == {} and evidence.abnormal == ()


def test_stdin_is_read_once_for_matches_lines_and_digest() -> None:
    data = Path(case_inputs("killed-rank1")[0]).read_bytes()
    evidence = assemble(["-"], _matcher(), _WITH_LINES, stdin=io.BytesIO(data))
    assert evidence.digests == {"<stdin>": hashlib.sha256(data).hexdigest()}
    assert evidence.abnormal


def test_warnings_and_info_are_chatter_errors_are_not() -> None:
    # Lines from tests/hybrid/corpus/exc-keyerror/launcher.log.
    assert is_below_error(
        "W1130 06:50:23.155000 16731 torch/distributed/elastic/multiprocessing/api.py:1028] "
        "Sending process 16758 closing signal SIGTERM"
    )
    assert is_below_error("[default1]:2026-11-30 06:50:17,880 INFO train: step 2 loss 0.6104")
    assert not is_below_error(
        "E1130 06:50:23.547000 16731 torch/distributed/elastic/multiprocessing/api.py:1002] "
        "failed (exitcode: 1) local_rank: 1 (pid: 16759) of binary: "
        "/work/wt-hybrid/.venv/bin/python"
    )
    assert not is_below_error("[default1]:[rank1]: KeyError: 'label'")


# Real lines: two DDP ranks' tracebacks interleaved, pasted without the exception line that
# ends them (public issue Lightning-AI/pytorch-lightning#19106).
FRAMES_ONLY = """\
    return _sync_ddp(result, group=group, reduce_op=reduce_op)
  File "/myenv/python3.10/site-packages/lightning_fabric/utilities/distributed.py", line 220, in _sync_ddp
    broadcast(object_sizes_tensor, src=src, group=group)
  File "/myenv/python3.10/site-packages/torch/distributed/distributed_c10d.py", line 1906, in broadcast
    work = default_pg.broadcast([tensor], opts)
"""  # noqa: E501


def test_traceback_frames_count_only_where_nothing_else_is_abnormal(tmp_path: Path) -> None:
    alone = tmp_path / "frames.log"
    alone.write_text(FRAMES_ONLY)
    evidence = assemble([str(alone)], _matcher(), _WITH_LINES)
    assert [m.event.line for m in evidence.abnormal] == [2, 4]
    # With the exception line that ends them, a signature explains the failure: the frames
    # neither crowd the best effort's excerpt nor stand for the exception, whether the class is
    # a builtin or a module-qualified one whatever it is called.
    for tail in (
        "IndexError: list index out of range",
        "quillpack.reader.ShardFooterCorrupt: footer checksum 0x9f3a1c22 does not match "
        "0x00000000 in shard-00017.qpk",
    ):
        ended = tmp_path / "ended.log"
        ended.write_text(f"{FRAMES_ONLY}{tail}\n")
        evidence = assemble([str(ended)], _matcher(), _WITH_LINES)
        assert [m.signature_id for s in evidence.inputs for m in s.matches] == [
            "python.uncaught_exception"
        ]
        assert evidence.abnormal == ()
    # With an abnormal line no signature explains, that line is the evidence, not the frames
    # (torchrun's summary of the failed script, as tests/hybrid/corpus/exc-keyerror prints it).
    unexplained = tmp_path / "unexplained.log"
    unexplained.write_text(FRAMES_ONLY + "train.py FAILED\n")
    evidence = assemble([str(unexplained)], _matcher(), _WITH_LINES)
    assert [m.event.line for m in evidence.abnormal] == [6]
