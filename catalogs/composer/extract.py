"""MosaicML Composer's failure messages, from the source of a pinned release (see source.yaml).

Scope: the `composer` package's Trainer, the launcher (`composer` CLI), distributed set-up
(composer.utils.dist, composer.distributed: FSDP/parallelism), devices, checkpointing and object
stores, callbacks, optimizers and schedulers, and the core state/engine; raises, logger errors
and warnings, warnings.warn, and the asserts of the Trainer's argument checks. The speed-up
algorithms, bundled models, functional/loss/metrics helpers, profiler and third-party logger
integrations are out of scope.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.python_messages import extract_python

INCLUDE = ("composer/",)
EXCLUDE = (
    "composer/algorithms/",
    "composer/models/",
    "composer/functional/",
    "composer/loss/",
    "composer/metrics/",
    "composer/profiler/",
    "composer/loggers/",
)
# `assert cond, "..."` is a user-facing check only in the Trainer's argument checks and the
# launcher; elsewhere an assert is an internal invariant and is not a message users act on.
ASSERT_PATHS = ("composer/trainer/trainer.py", "composer/cli/")


def extract(checkout: Path, release: str) -> list:
    return extract_python(checkout, release, "composer", INCLUDE, EXCLUDE, ASSERT_PATHS)
