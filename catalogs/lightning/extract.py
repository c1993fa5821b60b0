"""PyTorch Lightning's and Lightning Fabric's failure messages, from the source of a pinned release
(see source.yaml).

Scope: the `pytorch_lightning` and `lightning_fabric` packages (Trainer and Fabric set-up, the
accelerator/strategy/cluster-environment connectors, strategies and launchers, precision plugins,
checkpointing and callbacks, loops, utilities); raises (MisconfigurationException and the builtin
exceptions), logger errors and warnings, warnings.warn and Lightning's own `rank_zero_warn`.
Removed-API stubs (_graveyard), demos, the model server, profilers and third-party logger
integrations are out of scope (1.9 also ships the profilers' old module as `profiler/`).
"""

from __future__ import annotations

from pathlib import Path

from catalogs.python_messages import extract_python

INCLUDE = ("src/pytorch_lightning/", "src/lightning_fabric/")
EXCLUDE = (
    "src/pytorch_lightning/_graveyard/",
    "src/lightning_fabric/_graveyard/",
    "src/pytorch_lightning/demos/",
    "src/pytorch_lightning/serve/",
    "src/pytorch_lightning/profilers/",
    "src/pytorch_lightning/profiler/",
    "src/pytorch_lightning/loggers/",
    "src/lightning_fabric/loggers/",
    "src/pytorch_lightning/__setup__.py",
    "src/lightning_fabric/__setup__.py",
)
# `assert cond, "..."` is a user-facing check only in the device parser (the `devices=` argument);
# elsewhere an assert is an internal invariant and is not a message users act on.
ASSERT_PATHS = ("src/lightning_fabric/utilities/device_parser.py",)
# lightning_utilities' rank_zero_warn / rank_zero_deprecation: warnings.warn on rank 0, printed
# by Lightning's formatwarning as "<file>:<line>: <message>".
NAMED = {"rank_zero_warn": "WARNING", "rank_zero_deprecation": "WARNING"}


def extract(checkout: Path, release: str) -> list:
    return extract_python(
        checkout, release, "lightning", INCLUDE, EXCLUDE, ASSERT_PATHS, named=NAMED
    )
