"""The second read of the inputs: digests, and the abnormal lines the rules did not match."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

from denpex.hybrid.harvest import harvest, is_below_error, lexicon_matcher
from tests.hybrid.support import case_inputs


def test_every_input_is_digested_even_one_skipped_as_binary() -> None:
    # worker-sigsegv's rank 0 log holds a NUL byte printed by the DataLoader's crash handler.
    paths = case_inputs("worker-sigsegv")
    found = harvest(paths, None, skip=set(), matcher=lexicon_matcher(), year=None)
    assert set(found.digests) == set(paths)
    for path in paths:
        assert found.digests[path] == hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_lines_the_rules_did_not_match_are_found_and_matched_ones_skipped() -> None:
    paths = case_inputs("killed-rank1")
    everything = harvest(paths, None, skip=set(), matcher=lexicon_matcher(), year=None)
    texts = [m.event.text for m in everything.matches]
    assert any("traceback : Signal 9 (SIGKILL) received by PID" in t for t in texts)
    assert any(t.endswith("train.py FAILED") for t in texts)
    first = everything.matches[0].event
    fewer = harvest(
        paths, None, skip={(first.source, first.line)}, matcher=lexicon_matcher(), year=None
    )
    assert len(fewer.matches) == len(everything.matches) - 1
    assert len({(m.event.source, m.event.line) for m in everything.matches}) == len(texts)


def test_a_rewindable_stdin_is_read_from_its_start() -> None:
    data = Path(case_inputs("killed-rank1")[0]).read_bytes()
    stream = io.BytesIO(data)
    stream.seek(len(data))
    found = harvest(["-"], stream, skip=set(), matcher=lexicon_matcher(), year=None)
    assert found.digests == {"<stdin>": hashlib.sha256(data).hexdigest()}
    assert found.matches


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
