"""Compiled matchers, kept for the process: curation compiles the same library many times.

Consumes a library, the signatures a draft adds to it, a backend and the cache folder;
produces a `Matcher`. Compiling the whole library costs seconds; a back-test, a promotion and
the API's next request all need the same one, so the last few are kept, keyed by the library's
label, the backend and the added signatures' content.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from denpex.curation.settings import CurationSettings
from denpex.match.scan import Matcher
from denpex.signatures.library import Library, load_library, load_overlay
from denpex.signatures.signature import Signature

KEPT = 3
_kept: OrderedDict[tuple[str, str, tuple[str, ...]], Matcher] = OrderedDict()


def compiled(
    library: Library,
    backend: str,
    cache_dir: Path | None,
    added: Sequence[Signature] = (),
) -> Matcher:
    """The matcher of `library` plus `added` (compiled once per process)."""
    key = (library.label, backend, tuple(s.model_dump_json() for s in added))
    if key in _kept:
        _kept.move_to_end(key)
        return _kept[key]
    whole = library.with_signatures(added) if added else library
    matcher = Matcher(whole, backend, cache_dir)
    _kept[key] = matcher
    while len(_kept) > KEPT:
        _kept.popitem(last=False)
    return matcher


@cache
def packaged_library(rules_dir: Path | None, cache_dir: Path | None) -> Library:
    """The packaged library is read-only: loaded once per process."""
    return load_library(rules_dir, cache_dir=cache_dir)


def current_library(settings: CurationSettings) -> Library:
    """The packaged library with the overlay as it stands, as a diagnosis loads it."""
    library = packaged_library(settings.rules_dir, settings.cache_dir)
    if settings.left_out:
        library = library.without(settings.left_out)
    if not (settings.overlay_dir / "VERSION").is_file():
        return library
    overlay = load_overlay(settings.overlay_dir)
    return library.with_signatures(overlay.signatures, overlay.label)
