"""WebDataset's failure messages, from the source of a pinned release (see source.yaml).

Scope: the `webdataset` package (shard lists and node/worker splitting, tar readers, `gopen`
pipes, decoders, caches, writers and the fluent pipeline). It moved from `webdataset/` to
`src/webdataset/` in 0.3; both layouts are read. Raises keep the exception's name as the level;
`warnings.warn` is WARNING;
`IOError` is recorded as the `OSError` Python prints.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from catalogs.python_messages import extract_python

INCLUDE = ("webdataset/", "src/webdataset/")
EXCLUDE = ("webdataset/tests/", "src/webdataset/tests/")


# Python 3 prints the aliases of OSError by its own name ("raise IOError(...)" -> "OSError: ...").
ALIASES = {"IOError": "OSError", "EnvironmentError": "OSError"}


def extract(checkout: Path, release: str) -> list:
    found = extract_python(checkout, release, "webdataset", INCLUDE, EXCLUDE)
    return [replace(m, level=ALIASES.get(m.level, m.level)) for m in found]
