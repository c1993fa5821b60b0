"""Where the command line keeps parsed signatures and compiled databases between runs."""

from __future__ import annotations

import os
from pathlib import Path


def default_cache_dir() -> Path:
    """$DENPEX_CACHE_DIR, else $XDG_CACHE_HOME/denpex, else ~/.cache/denpex."""
    if explicit := os.environ.get("DENPEX_CACHE_DIR"):
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "denpex"
