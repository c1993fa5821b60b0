"""Ray's (Python side) failure messages, from the source of a pinned release (see source.yaml).

Scope: ray/train, ray/air, ray/_private (worker, node, services, runtime env), ray/exceptions,
the autoscaler, ray/util/collective and the actor API. Vendored third-party code is out of scope.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.python_messages import extract_python

INCLUDE = (
    "python/ray/train/",
    "python/ray/air/",
    "python/ray/_private/",
    "python/ray/exceptions.py",
    "python/ray/autoscaler/",
    "python/ray/util/collective/",
    "python/ray/actor.py",
    "python/ray/worker.py",
)
EXCLUDE = (
    "python/ray/_private/thirdparty/",
    "python/ray/_private/runtime_env/agent/thirdparty_files/",
    "python/ray/autoscaler/_private/_kubernetes/",
)
# `assert cond, "..."` is a user-facing check only in these files (configuration and argument
# validation); elsewhere an assert is an internal invariant and is not a message users act on.
ASSERT_PATHS = ("python/ray/train/",)


def extract(checkout: Path, release: str) -> list:
    return extract_python(checkout, release, "ray", INCLUDE, EXCLUDE, ASSERT_PATHS)
