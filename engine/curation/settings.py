"""What curation is configured with; filled in at the edge (CLI, API), never read here.

Consumes nothing; produces a plain frozen dataclass: where the incident store and the
deployment's overlay folder are, and which labelled cases and healthy logs a draft is
back-tested on.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CurationSettings:
    store_url: str
    overlay_dir: Path
    """The deployment's overlay library folder; promotions write here, never into the package."""
    eval_dirs: tuple[Path, ...] = ()
    """Labelled case directories (`<dir>/<case>/expected.json`: evals/corpus, evals/heldout)."""
    healthy: tuple[Path, ...] = ()
    """Logs of runs that succeeded (files or folders, e.g. evals/healthy); clean cases of
    `eval_dirs` count too."""
    rules_dir: Path | None = None
    cache_dir: Path | None = None
    backend: str = "auto"
    threshold: float = 0.6
    """The gate's confidence threshold, as `denpex diagnose` uses it."""
    left_out: frozenset[str] = frozenset()
    """Packaged signatures left out (the learning curve's library that has not seen the
    held-out set); empty in production."""
    seed: bool = True
    """Whether the packaged seed history (the labelled eval cases' lines) counts as material
    of other classes when a draft's distinctive lines are chosen; the learning curve turns it
    off, since the seed holds cases it has not reached yet."""

    @property
    def drafts_dir(self) -> Path:
        """Drafts wait here for the curator's edits (a hidden folder: not part of the library)."""
        return self.overlay_dir / ".drafts"


def default_eval_dirs(root: Path) -> tuple[Path, ...]:
    """The repository's labelled sets under `root`, when it has them."""
    return tuple(p for p in (root / "evals" / "corpus", root / "evals" / "heldout") if p.is_dir())


def default_healthy(root: Path) -> tuple[Path, ...]:
    healthy = root / "evals" / "healthy"
    return (healthy,) if healthy.is_dir() else ()
