"""What curation is configured with; filled in at the edge (CLI, API), never read here.

Consumes nothing; produces a plain frozen dataclass: where the incident store and the
deployment's overlay folder are, and which labelled cases and healthy logs a draft is
back-tested on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


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

    def as_json(self) -> dict[str, Any]:
        """Plain data, for a job's workers (paths as strings)."""
        return {
            "store_url": self.store_url,
            "overlay_dir": str(self.overlay_dir),
            "eval_dirs": [str(p) for p in self.eval_dirs],
            "healthy": [str(p) for p in self.healthy],
            "rules_dir": str(self.rules_dir) if self.rules_dir else None,
            "cache_dir": str(self.cache_dir) if self.cache_dir else None,
            "backend": self.backend,
            "threshold": self.threshold,
            "left_out": sorted(self.left_out),
            "seed": self.seed,
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> CurationSettings:
        return cls(
            store_url=value["store_url"],
            overlay_dir=Path(value["overlay_dir"]),
            eval_dirs=tuple(Path(p) for p in value["eval_dirs"]),
            healthy=tuple(Path(p) for p in value["healthy"]),
            rules_dir=Path(value["rules_dir"]) if value["rules_dir"] else None,
            cache_dir=Path(value["cache_dir"]) if value["cache_dir"] else None,
            backend=value["backend"],
            threshold=value["threshold"],
            left_out=frozenset(value["left_out"]),
            seed=value["seed"],
        )


def default_eval_dirs(root: Path) -> tuple[Path, ...]:
    """The repository's labelled sets under `root`, when it has them."""
    return tuple(p for p in (root / "evals" / "corpus", root / "evals" / "heldout") if p.is_dir())


def default_healthy(root: Path) -> tuple[Path, ...]:
    healthy = root / "evals" / "healthy"
    return (healthy,) if healthy.is_dir() else ()
