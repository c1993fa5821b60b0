"""DGL's distributed-training failure messages, from the source of a pinned release (see
source.yaml).

Scope: `dgl/distributed` only (initialize and the RPC client/server, DistGraph, DistTensor,
partitioning and the partition book, the distributed dataloader and optimizers); raises,
logger errors and warnings, and DGL's own `dgl_warning`. The rest of DGL, its C++ runtime's
messages (in the shared library) and the tools/launch.py launcher (not in the wheel) are out of
scope.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.python_messages import extract_python

INCLUDE = ("python/dgl/distributed/",)
# `assert cond, "..."` is a user-facing check only in initialize() and the partition loader;
# elsewhere an assert is an internal invariant and is not a message users act on.
ASSERT_PATHS = ("python/dgl/distributed/dist_context.py", "python/dgl/distributed/partition.py")
# dgl.base.dgl_warning: warnings.warn with category DGLWarning.
NAMED = {"dgl_warning": "WARNING"}


def extract(checkout: Path, release: str) -> list:
    return extract_python(checkout, release, "dgl", INCLUDE, (), ASSERT_PATHS, named=NAMED)
