"""The Flight Recorder dumps among scanned inputs, as `triage_dumps` takes them.

Consumes `ScannedInput`s (the dumps ingest kept whole); produces `DumpFile`s with the host each
dump's path states. Shared by `denpex hang` and `denpex diagnose`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from denpex.hang.triage import DumpFile
from denpex.ingest.attribution import attribution_from_path
from denpex.match.scan import ScannedInput


def dump_files(
    inputs: Iterable[ScannedInput], *, capture_from_mtime: bool = False
) -> list[DumpFile]:
    """The Flight Recorder dumps among scanned inputs, ready for `triage_dumps` (what
    `denpex diagnose` hands over too)."""
    return [
        DumpFile(
            name=s.name,
            data=s.dump,
            host=_host(s),
            host_from_name=False,
            captured_at=_mtime(s.name) if capture_from_mtime else None,
        )
        for s in inputs
        if s.dump is not None
    ]


def _host(scanned: ScannedInput) -> str | None:
    """The host the dump's path states: from the part below the path the user gave, or from a
    relative path the user typed (`node07/fr_dump_3`), never from an absolute path's prefix."""
    host = scanned.who.host
    if host is None and not Path(scanned.name).is_absolute():
        host = attribution_from_path(scanned.name).host
    return host


def _mtime(name: str) -> float | None:
    path = Path(name)
    try:
        return path.stat().st_mtime if path.is_file() else None
    except OSError:
        return None
