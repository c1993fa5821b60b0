"""The scanners: one database, safe to scan from many threads at once (the API's worker pool)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from denpex.signatures.backends import PatternSpec, available_backends, make_scanner

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
