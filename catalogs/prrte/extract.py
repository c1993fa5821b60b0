"""PRRTE's user-facing failure text (the launcher behind Open MPI 5's mpirun/prterun).

Almost all of it is show-help text: `src/docs/show-help-files/help-*.txt` and the help files of
the MCA components (catalogs/helpfiles.py), plus `prte_output(prte_clean_output, ...)` banners
(the TCP connection failure). Test programs and examples are left out.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.core.message import Message
from catalogs.helpfiles import help_messages

SKIP = ("src/docs/prrte-rst-content",)


def extract(checkout: Path, release: str) -> list[Message]:
    return help_messages(checkout, release, "prrte", ("src",), SKIP)
