"""The catalogs' accounting: what each emitter's source prints and what became of it.

Consumes the `CATALOG.json` of every generated family in a rules directory (written by the
catalog generator, shipped with the library); produces, per emitter and release line, the
messages found, mapped to a class, kept as context and excluded with a reason, and the
signatures generated. `denpex rules coverage` prints it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from denpex.errors import RulesError
from denpex.signatures.library import CATALOG_SUFFIX, default_rules_dir

CATALOG_FILE = "CATALOG.json"


@dataclass(frozen=True, slots=True)
class LineCoverage:
    line: str
    ref: str
    found: int
    mapped: int
    context: int
    excluded: int
    signatures: int

    def share(self, count: int) -> str:
        return f"{100 * count / self.found:.0f}%" if self.found else "-"


@dataclass(frozen=True, slots=True)
class EmitterCoverage:
    emitter: str
    family: str
    releases: list[LineCoverage]
    total: LineCoverage


def _line(raw: dict, line: str | None = None) -> LineCoverage:
    return LineCoverage(
        line=line or str(raw["line"]),
        ref=str(raw.get("ref", "")),
        found=int(raw["found"]),
        mapped=int(raw["mapped"]),
        context=int(raw["context"]),
        excluded=int(raw["excluded"]),
        signatures=int(raw["signatures"]),
    )


def read_coverage(rules_dir: Path | None = None) -> list[EmitterCoverage]:
    rules_dir = rules_dir or default_rules_dir()
    emitters = []
    for path in sorted(rules_dir.glob(f"*{CATALOG_SUFFIX}/{CATALOG_FILE}")):
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            emitters.append(
                EmitterCoverage(
                    emitter=raw["emitter"],
                    family=raw["family"],
                    releases=[_line(item) for item in raw["releases"]],
                    total=_line(raw["totals"], "all"),
                )
            )
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise RulesError(f"{path}: not a catalog accounting file ({error})") from None
    return emitters
