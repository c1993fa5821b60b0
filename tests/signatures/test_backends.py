"""The scanners: one database, safe to scan from many threads at once (the API's worker pool)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from denpex.signatures.backends import PatternSpec, available_backends, line_end, make_scanner

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
