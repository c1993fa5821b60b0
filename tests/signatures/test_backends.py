"""The scanners: one database, safe to scan from many threads at once (the API's worker pool)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from denpex.signatures import backends
from denpex.signatures.backends import (
    PatternSpec,
    RegexScanner,
    available_backends,
    line_end,
    make_scanner,
)

LINE = b"[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"


@pytest.mark.parametrize("backend", available_backends())
def test_many_threads_scan_with_one_scanner_and_agree(backend: str) -> None:
    pattern = PatternSpec("CUDA out of memory", False, ("CUDA out of memory",))
    scanner = make_scanner([pattern], backend)
    buffer = (b"step 1 ok\n" * 20_000 + LINE) * 50  # long enough for scans to overlap
    expected = scanner.candidate_lines(buffer)
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(scanner.candidate_lines, [buffer] * 32))
    assert expected and all(result == expected for result in results)


@pytest.mark.parametrize("backend", available_backends())
def test_line_ends_are_the_candidate_lines_ends(backend: str) -> None:
    # Patterns that run to the end of their line: one report per line, at its newline.
    patterns = [
        PatternSpec("(?:step|iter)[^\n]*$", False, ("step", "iter")),
        PatternSpec("loss[ :=]+nan[^\n]*$", True, ("loss",)),
    ]
    scanner = make_scanner(patterns, backend)
    buffer = b"step 1 iter 1 loss 2.5\nNCCL INFO ok\nstep 2 LOSS: NaN\r\nlast step"
    ends = scanner.line_ends(buffer)
    assert ends == {0: [22, 53, 63], 1: [53]}
    starts = scanner.candidate_lines(buffer)
    assert {i: [line_end(buffer, s) for s in v] for i, v in starts.items()} == ends


@pytest.mark.parametrize("grams_from", [1, RegexScanner.GRAMS_FROM])
def test_the_re_scanner_rules_out_patterns_by_keyword_only_when_none_is_present(
    grams_from: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A small buffer is indexed by its 4-byte grams and each keyword looked up by its rarest
    # one: every pattern whose keyword is there (any of its keywords, a short one, a caseless
    # pattern's) is still searched, and the gram alone never proposes a line. A scanner of
    # fewer patterns than GRAMS_FROM tests each keyword directly, with the same result.
    monkeypatch.setattr(RegexScanner, "GRAMS_FROM", grams_from)
    patterns = [
        PatternSpec("CUDA out of memory", False, ("CUDA out of memory",)),
        PatternSpec("(?:NCCL|Gloo) timed out", False, ("NCCL", "Gloo")),
        PatternSpec("Xid 79", False, ("Xid",)),
        PatternSpec("segmentation fault", True, ("segmentation fault",)),
        PatternSpec("out of memory on rank", False, ("out of memory on rank",)),
        PatternSpec("memoryview", False, ("memoryview",)),
    ]
    buffer = b"[rank3]: CUDA out of memory\nGloo timed out\nXid 79\nSEGMENTATION FAULT\n"
    scanner = make_scanner(patterns, "re")
    assert scanner.candidate_lines(buffer) == {0: [0], 1: [28], 2: [43], 3: [50]}
    # The same patterns in a buffer too large to index, searched keyword by keyword.
    large = b"step 1 ok\n" * 30_000 + buffer
    offset = len(large) - len(buffer)
    assert scanner.candidate_lines(large) == {
        0: [offset],
        1: [offset + 28],
        2: [offset + 43],
        3: [offset + 50],
    }


@pytest.mark.skipif("hyperscan" not in available_backends(), reason="Hyperscan is not installed")
def test_a_database_another_process_is_compiling_is_waited_for_and_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    patterns = [PatternSpec("CUDA out of memory", False, ("CUDA out of memory",))]
    target = backends._cache_path(patterns, tmp_path)
    compile_ = backends._compile
    compiled: list[object] = []
    monkeypatch.setattr(backends, "_compile", lambda p: compiled.append(p) or compile_(p))
    with ThreadPoolExecutor(max_workers=1) as pool, backends.building(target):
        # Another process (here a thread, with a lock of its own) compiles the same patterns.
        waiting = pool.submit(backends.HyperscanScanner, patterns, tmp_path)
        time.sleep(0.3)
        assert not waiting.done()
        backends._save_database(compile_(patterns), target)
    scanner = waiting.result(timeout=60)
    assert compiled == []  # it read what the other wrote
    assert scanner.candidate_lines(LINE) == {0: [0]}
