"""Progress records from log text, read the way the scan reads an input."""

from __future__ import annotations

from denpex.ingest.attribution import attribution_from_path
from denpex.ingest.lines import SourceContext
from denpex.ingest.reader import Chunk
from denpex.progress.series import ProgressRecord, ProgressScanner


def records(text: str, name: str = "train.log") -> list[ProgressRecord]:
    context = SourceContext(name=name, who=attribution_from_path(name), default_year=2026)
    return ProgressScanner("re").records_in(Chunk(text.encode(), 0, 1, 0), context, 100_000)
