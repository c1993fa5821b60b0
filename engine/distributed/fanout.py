"""One scan split across processes (map) and put back together (reduce), unchanged.

Consumes the paths a user gave; produces, in three steps, exactly the `ScanResult` that
`denpex.evidence.scan_inputs` gives for them in one process:

- `plan_inputs` walks the paths without opening a file: the files in reading order, each with
  the warnings the walk said before it (skipped links, unreadable folders);
- `scan_units` (the map, in any process that can read the files) scans some of those files
  with the same matcher, lexicon and limits, into plain data (`denpex.distributed.codec`):
  matches with their lines and context, progress lines, dump summaries, digests, warnings;
- `assemble_units` (the reduce) decodes every file's inputs in plan order and checks the one
  thing a split scan can read differently: the year given to timestamps that print none, which
  one process carries from an earlier input to the next. An input read in another year than
  the single pass would have read it in is scanned again with that year, where the reducer can
  read it; where it cannot (a node's bundle), the diagnosis says so.

Assembling the evidence and reasoning (`assemble_scan`, `diagnose_evidence`) then run on the
result as they do after a single scan. The map's settings and results are JSON, so the same
functions serve a local process pool, Celery workers and node-side bundles.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from denpex.distributed.codec import CodecError, Signatures, decode_input, encode_input
from denpex.errors import InputError, InputTooLarge
from denpex.evidence import ScanResult, require_something_read, year_of
from denpex.hybrid.harvest import abnormal_lines
from denpex.ingest.sources import (
    DEFAULT_MAX_UNPACKED_BYTES,
    Collector,
    FileRef,
    InputLimits,
    StreamRef,
    inputs_of,
    walk,
)
from denpex.match.compiled import compiled_matcher
from denpex.match.scan import Matcher, ScannedInput

FORMAT = 1
"""The version of the map's results; a reducer refuses another."""

ScanProgress = Callable[[str, int], None]
"""Called after each input with its display name and the bytes read."""


@dataclass(frozen=True)
class ScanSettings:
    """What every map process needs to scan as the single pass would (JSON-able)."""

    rules_dir: str | None = None
    experimental: bool = False
    backend: str = "auto"
    cache_dir: str | None = None
    overlay_dir: str | None = None
    max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES
    digests: bool = False

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> ScanSettings:
        return cls(**value)

    def matcher(self) -> Matcher:
        """The compiled library, once per process."""
        return compiled_matcher(
            Path(self.rules_dir) if self.rules_dir else None,
            experimental=self.experimental,
            backend=self.backend,
            cache_dir=Path(self.cache_dir) if self.cache_dir else None,
            overlay_dir=Path(self.overlay_dir) if self.overlay_dir else None,
        )

    def lexicon(self) -> Any:
        return abnormal_lines(self.backend, Path(self.cache_dir) if self.cache_dir else None)

    def signatures(self) -> Signatures:
        return Signatures.of(self.matcher().library, self.lexicon().matcher.library)


@dataclass(frozen=True)
class PlanItem:
    ref: FileRef | StreamRef
    warnings_before: tuple[str, ...] = ()
    size: int = 0
    """The file's size on disk (0 for a stream), to balance the parts."""


@dataclass(frozen=True)
class Plan:
    items: tuple[PlanItem, ...]
    trailing: tuple[str, ...] = ()
    """Warnings the walk said after its last file."""


def plan_inputs(paths: list[str], *, shown_as: list[str] | None = None) -> Plan:
    """The files under `paths` in reading order, none opened. Raises InputError for a missing
    path, as the single pass does."""
    collector = Collector([])
    items: list[PlanItem] = []
    said = 0
    for ref in walk(paths, collector, shown_as=shown_as):
        before = tuple(collector.warnings[said:])
        said = len(collector.warnings)
        size = 0
        if isinstance(ref, FileRef):
            try:
                size = Path(ref.path).stat().st_size
            except OSError:
                size = 0  # the scan says it cannot be read, in its place
        items.append(PlanItem(ref, before, size))
    return Plan(tuple(items), tuple(collector.warnings[said:]))


def parts_of(plan: Plan, parts: int) -> list[list[int]]:
    """The plan's files (by index) in at most `parts` runs of about equal bytes, in order;
    streams are left out (only the process that holds them can read them)."""
    files = [n for n, item in enumerate(plan.items) if isinstance(item.ref, FileRef)]
    if not files:
        return []
    total = sum(plan.items[n].size for n in files) or len(files)
    share = total / max(1, parts)
    runs: list[list[int]] = [[]]
    filled = 0.0
    for number in files:
        if runs[-1] and filled >= share * len(runs) and len(runs) < parts:
            runs.append([])
        runs[-1].append(number)
        filled += plan.items[number].size or (total / len(files))
    return runs


def ref_json(ref: FileRef | StreamRef) -> dict[str, str]:
    if isinstance(ref, FileRef):
        return {"path": ref.path, "shown": ref.shown, "relative": ref.relative}
    return {"stream": ref.given}


def ref_of(value: Mapping[str, str]) -> FileRef | StreamRef:
    if "stream" in value:
        return StreamRef(value["stream"])
    return FileRef(value["path"], value["shown"], value["relative"])


# --- map --------------------------------------------------------------------------------------


def scan_units(
    refs: Sequence[Mapping[str, str]],
    settings: Mapping[str, Any],
    *,
    stdin: BinaryIO | None = None,
    progress: ScanProgress | None = None,
) -> dict[str, Any]:
    """Scans the files `refs` names, in order, as the single pass scans them; JSON out.

    One file's result: its inputs (an archive holds many) and the warnings said while reading
    it, in the single pass's order."""
    chosen = ScanSettings.from_json(settings)
    matcher = chosen.matcher()
    lexicon = chosen.lexicon()
    collector = Collector([], InputLimits(max_unpacked_bytes=chosen.max_unpacked_bytes))
    fallback_year: int | None = None
    units = []
    for value in refs:
        said = len(collector.warnings)
        inputs = []
        for item in inputs_of(ref_of(value), stdin, collector):
            scanned = matcher.scan_input(
                item, fallback_year, abnormal=lexicon, digest=chosen.digests
            )
            collector.warnings.extend(scanned.warnings)
            fallback_year = fallback_year or year_of(scanned)
            inputs.append(encode_input(scanned))
            if progress is not None:
                progress(item.name, scanned.bytes)
        units.append({"inputs": inputs, "warnings": collector.warnings[said:]})
    return {
        "format": FORMAT,
        "rules": matcher.library.label,
        "lexicon": lexicon.matcher.library.label,
        "units": units,
        "unpacked_bytes": collector.unpacked_bytes,
    }


# --- reduce -----------------------------------------------------------------------------------


Rescan = Callable[[FileRef | StreamRef, int, int | None], ScannedInput]
"""Scans again the n-th input of a file with the year its year-less timestamps take."""


@dataclass
class Assembled:
    scan: ScanResult
    rescanned: list[str] = field(default_factory=list)
    """Inputs scanned again in the year the single pass reads them in."""


def check_results(results: Iterable[Mapping[str, Any]], signatures: Signatures) -> None:
    """Refuses map results of another format or scanned with another library."""
    for result in results:
        if result.get("format") != FORMAT:
            raise CodecError(f"scanned evidence of format {result.get('format')!r}, not {FORMAT}")
        if (
            result.get("rules") != signatures.rules
            or result.get("lexicon") != signatures.lexicon_label
        ):
            raise CodecError(
                f"evidence scanned with rules {result.get('rules')} and lexicon "
                f"{result.get('lexicon')}; this process has rules {signatures.rules} and "
                f"lexicon {signatures.lexicon_label}"
            )


def assemble_units(
    plan: Plan,
    units: Mapping[int, Mapping[str, Any]],
    signatures: Signatures,
    *,
    max_unpacked_bytes: int,
    unpacked_bytes: int = 0,
    rescan: Rescan | None = None,
) -> Assembled:
    """The single pass's `ScanResult` from every file's map result (by plan index)."""
    if unpacked_bytes > max_unpacked_bytes:
        raise InputTooLarge(
            "the inputs' archives and compressed files unpack to more than "
            f"{max_unpacked_bytes} bytes (the max_unpacked_bytes limit)"
        )
    result = ScanResult()
    assembled = Assembled(result)
    fallback_year: int | None = None
    this_year = datetime.now(UTC).year
    for number, item in enumerate(plan.items):
        result.warnings.extend(item.warnings_before)
        unit = units.get(number)
        if unit is None:
            raise CodecError(f"no scan of {_shown(item.ref)} came back")
        result.warnings.extend(unit["warnings"])
        for member, value in enumerate(unit["inputs"]):
            scanned = decode_input(value, signatures)
            if not scanned.year_stated and scanned.default_year is not None:
                wanted = fallback_year or this_year
                alternative = value.get("by_year", {}).get(str(wanted))
                if wanted != scanned.default_year and alternative is not None:
                    scanned = decode_input(alternative, signatures)  # a node scanned it so
                elif wanted != scanned.default_year:
                    if rescan is not None:
                        scanned = rescan(item.ref, member, fallback_year)
                        assembled.rescanned.append(scanned.name)
                    else:
                        result.warnings.append(
                            f"{scanned.name}: timestamps that print no year were read as "
                            f"{scanned.default_year}; read with the other inputs they would be "
                            f"{wanted}"
                        )
            fallback_year = fallback_year or year_of(scanned)
            result.inputs.append(scanned)
    result.warnings.extend(plan.trailing)
    require_something_read(result.inputs, result.warnings)
    return assembled


def local_rescan(settings: ScanSettings, stdin: BinaryIO | None = None) -> Rescan:
    """Scans an input again in this process, which can read the files."""

    def again(ref: FileRef | StreamRef, member: int, fallback_year: int | None) -> ScannedInput:
        collector = Collector([], InputLimits(max_unpacked_bytes=settings.max_unpacked_bytes))
        for number, item in enumerate(inputs_of(ref, stdin, collector)):
            if number == member:
                return settings.matcher().scan_input(
                    item, fallback_year, abnormal=settings.lexicon(), digest=settings.digests
                )
        raise InputError(f"{_shown(ref)}: changed while it was being diagnosed")

    return again


def _shown(ref: FileRef | StreamRef) -> str:
    return ref.shown if isinstance(ref, FileRef) else ref.given
