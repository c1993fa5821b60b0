"""A matcher less some signature families reads a log as a matcher compiled without them
would, on the same compiled scanners (the family-out evaluations ablate one family at a time)."""

from __future__ import annotations

import pytest

from denpex.match.scan import Matcher
from tests.conftest import REPO, cached_library

# A real multi-rank Gloo run of the corpus whose lines several families read (Gloo's timeout,
# torchelastic's summary, Python's tracebacks).
CASE = REPO / "evals" / "corpus" / "inject-collective-timeout-stuck-rank"
FAMILIES = ("c10d", "torchelastic", "python", "nccl", "gloo", "fsdp")


def _read(matcher: Matcher) -> list[tuple[str, str, int | None]]:
    found = []
    for path in sorted(CASE.rglob("*.log")):
        text = path.read_text(encoding="utf-8", errors="replace")
        found += [
            (m.signature.id, m.event.text, m.event.rank) for m in matcher.scan_text(text, path.name)
        ]
    return sorted(found)


@pytest.mark.parametrize("backend", ["hyperscan", "re"])
@pytest.mark.parametrize("dropped", [("gloo",), ("python", "torchelastic")])
def test_dropping_families_reads_as_a_library_compiled_without_them(
    backend: str, dropped: tuple[str, ...]
) -> None:
    library = cached_library()
    families = {signature_id.split(".", 1)[0] for signature_id in library.ids()}
    small = library.without_families(families - set(FAMILIES))
    whole = Matcher(small, backend)
    ablated = whole.without_families(dropped)
    assert _read(ablated) == _read(Matcher(small.without_families(dropped), backend))
    assert _read(ablated) != _read(whole)  # the families did read some of these lines
    assert not {s.family for s in ablated.library.signatures} & set(dropped)
