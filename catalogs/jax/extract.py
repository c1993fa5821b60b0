"""JAX's (Python side) failure messages, from the source of a pinned release (see source.yaml).

Scope: the multi-host runtime a failed run goes through: jax.distributed and the cluster
detectors, the backend bridge (xla_bridge), compilation and dispatch, pjit/pxla sharding, arrays
and multihost utilities. Tracing-time API errors (shapes in user code) of the rest of jax/_src are
not in scope. The XLA/PJRT runtime texts (C++) are the `xla` emitter.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.python_messages import extract_python

INCLUDE = (
    "jax/_src/distributed.py",
    "jax/_src/clusters/",
    "jax/_src/xla_bridge.py",
    "jax/_src/compiler.py",
    "jax/_src/dispatch.py",
    "jax/_src/interpreters/pxla.py",
    "jax/_src/array.py",
    "jax/_src/sharding_impls.py",
    "jax/_src/pjit.py",
    "jax/_src/mesh.py",
    "jax/_src/config.py",
    "jax/_src/compilation_cache.py",
    "jax/_src/profiler.py",
    "jax/experimental/multihost_utils.py",
    "jax/_src/lib/",
)
EXCLUDE = ()
# `assert cond, "..."` is a user-facing check only in these files (configuration and argument
# validation); elsewhere an assert is an internal invariant and is not a message users act on.
ASSERT_PATHS = ()


def extract(checkout: Path, release: str) -> list:
    return extract_python(checkout, release, "jax", INCLUDE, EXCLUDE, ASSERT_PATHS)
