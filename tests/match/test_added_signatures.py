"""Signatures added to the packaged library (an overlay's, a draft's) are compiled apart from it:
the packaged library's compiled database is reused, and the log reads as it would with one
database of both."""

from __future__ import annotations

from pathlib import Path

import pytest

from denpex.match.scan import Matcher
from tests.conftest import REPO, cached_library

CASE = REPO / "evals" / "corpus" / "inject-collective-timeout-stuck-rank"
PACKAGED = ("c10d", "nccl", "fsdp", "torchelastic", "python")
ADDED = ("gloo",)


def _read(matcher: Matcher) -> list[tuple[str, str]]:
    found = []
    for path in sorted(CASE.rglob("*.log")):
        text = path.read_text(encoding="utf-8", errors="replace")
        found += [(m.signature.id, m.event.text) for m in matcher.scan_text(text, path.name)]
    return sorted(found)


@pytest.mark.parametrize("backend", ["hyperscan", "re"])
def test_added_signatures_read_as_one_library_would(backend: str, tmp_path: Path) -> None:
    library = cached_library()
    families = {signature_id.split(".", 1)[0] for signature_id in library.ids()}
    packaged = library.without_families(families - set(PACKAGED))
    added = list(library.without_families(families - set(ADDED)).signatures)
    both = library.without_families(families - set(PACKAGED) - set(ADDED))

    cache = tmp_path / "cache"
    Matcher(packaged, backend, cache)
    before = set(cache.glob("*")) if cache.exists() else set()
    extended = Matcher(packaged.with_signatures(added), backend, cache)

    assert _read(extended) == _read(Matcher(both, backend))
    assert {s.family for s in added} <= {sig_id.split(".")[0] for sig_id, _ in _read(extended)}
    if backend == "hyperscan":  # the packaged database is reused; only the added one is new
        new = set(cache.glob("*")) - before
        # compiling both into one would have written a database larger than the packaged one
        assert new and all(p.stat().st_size < max(q.stat().st_size for q in before) for p in new)
