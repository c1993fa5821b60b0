"""The deployment's overlay library folder: curated signatures beside the packaged library.

Consumes the overlay folder of `CurationSettings`; produces its version and signatures, and
writes a promoted signature: the file first, then the raised version, then a line of history
(`HISTORY.jsonl`: version, signature, incident, curator, time). Every file is written to a
temporary name and renamed, so a reader sees the old overlay or the new one, never half of it.
The packaged library is never written.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

from denpex.signatures.library import load_overlay
from denpex.signatures.signature import Signature

HISTORY = "HISTORY.jsonl"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(path)


class Overlay:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @property
    def version(self) -> int:
        """0 before the first promotion."""
        try:
            return int((self.folder / "VERSION").read_text(encoding="utf-8").strip())
        except (OSError, ValueError):
            return 0

    def signatures(self) -> list[Signature]:
        if self.version == 0:
            return []
        return list(load_overlay(self.folder, include_experimental=True).signatures)

    def path_of(self, signature: Signature) -> Path:
        family, name = signature.id.split(".", 1)
        return self.folder / family / f"{name}.yaml"

    def add(self, signature: Signature, text: str, *, incident: str | None, by: str | None) -> int:
        """Writes the signature's file and raises the version; returns the new version."""
        version = self.version + 1
        _write(self.path_of(signature), text)
        _write(self.folder / "VERSION", f"{version}\n")
        record = {
            "version": version,
            "signature": signature.id,
            "incident": incident,
            "by": by,
            "at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        with (self.folder / HISTORY).open("a", encoding="utf-8") as history:
            history.write(json.dumps(record) + "\n")
        return version

    def history(self) -> list[dict[str, object]]:
        try:
            text = (self.folder / HISTORY).read_text(encoding="utf-8")
        except OSError:
            return []
        return [json.loads(line) for line in text.splitlines() if line.strip()]
