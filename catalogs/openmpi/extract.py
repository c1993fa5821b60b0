"""Open MPI's user-facing failure text, from the source of a pinned release (see source.yaml).

What mpirun and the MPI library print when a job fails is almost all show-help text: the
`help-*.txt` files under ompi/, opal/, orte/ (4.x) and oshmem/, one `[topic]` per message
(catalogs/helpfiles.py), plus the few banners printed with `opal_output(orte_clean_output, ...)`.
From 5.0 on, mpirun is PRRTE's launcher and its messages are in the `prrte` catalog.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.core.message import Message
from catalogs.helpfiles import help_messages

ROOTS = ("ompi", "opal", "orte", "oshmem")
# Test programs and the bundled third-party trees (hwloc, libevent, PMIx) print their own text.
SKIP = ("opal/mca/hwloc/hwloc2", "opal/mca/event/libevent", "opal/mca/pmix/pmix", "ompi/contrib")


def extract(checkout: Path, release: str) -> list[Message]:
    return help_messages(checkout, release, "openmpi", ROOTS, SKIP)
