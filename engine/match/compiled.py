"""The signature library compiled once per process for a given set of choices.

Consumes where the library lives, whether experimental signatures take part and the matcher
backend; produces a `Matcher`. Compiling thousands of signatures into a Hyperscan database
takes seconds (minutes on a busy machine), and a compiled `Matcher` is immutable and safe to
share between threads (each thread scans with its own scratch), so a long-lived caller (the API
server, an evaluation, a test session) pays for it once. The cache directory only says where
parsed signatures and compiled databases are kept between processes; it does not change the
result, so it is not part of what identifies a compiled library. A deployment's overlay is:
its version (the `VERSION` file `denpex curate promote` bumps) is read on every call, so a
promotion is seen by the next diagnosis. The packaged library is read when first asked for: a
process that must see edited rules builds its own `Matcher`.
"""

from __future__ import annotations

import threading
from pathlib import Path

from denpex.match.scan import Matcher
from denpex.signatures.library import load_library

_compiled: dict[tuple[Path | None, bool, str, Path | None, str | None], Matcher] = {}
_compiling = threading.Lock()


def compiled_matcher(
    rules_dir: Path | None = None,
    *,
    experimental: bool = False,
    backend: str = "auto",
    cache_dir: Path | None = None,
    overlay_dir: Path | None = None,
) -> Matcher:
    """The matcher of the library in `rules_dir` (the bundled one when None), with the
    overlay in `overlay_dir` on top when one is given."""
    key = (rules_dir, experimental, backend, overlay_dir, _overlay_version(overlay_dir))
    with _compiling:
        matcher = _compiled.get(key)
        if matcher is None:
            library = load_library(
                rules_dir,
                include_experimental=experimental,
                cache_dir=cache_dir,
                overlay_dir=overlay_dir,
            )
            matcher = _compiled[key] = Matcher(library, backend, cache_dir)
    return matcher


def _overlay_version(overlay_dir: Path | None) -> str | None:
    if overlay_dir is None:
        return None
    try:
        return (overlay_dir / "VERSION").read_text(encoding="utf-8").strip()
    except OSError:
        return None
