"""`denpex hang PATH...`: the hang view of the assembled evidence.

Consumes the paths a user gave and explicit options (read at the CLI edge and passed here);
produces a `HangReport`. The inputs are assembled by `denpex.evidence.assemble`, exactly as
`denpex diagnose` assembles them: Flight Recorder dumps are kept whole, every other input is
scanned by the signature library, ranks, hosts and clocks are resolved, and the world size is
inferred from everything in the inputs (a rank's log, the dumps' names) unless `--world-size`
states it. Raises `InputError` for unusable input (missing path, no usable dump, a malformed
mapping or capture-times file).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

from denpex.errors import InputError
from denpex.evidence import Evidence, EvidenceOptions, assemble
from denpex.hang.dumps import DumpError, read_dump
from denpex.hang.hosts import parse_mapping
from denpex.hang.models import HangReport, Scheduler
from denpex.ingest.sources import InputLimits
from denpex.match.compiled import compiled_matcher
from denpex.match.scan import ScannedInput

MAX_SIDE_FILE = 64 * 1024 * 1024


@dataclass(frozen=True)
class HangRequest:
    paths: list[str]
    scheduler: Scheduler | None = None
    world_size: int | None = None
    rank_hosts_file: Path | None = None
    capture_times_file: Path | None = None
    capture_from_mtime: bool = False
    rules_dir: Path | None = None
    backend: str = "auto"
    cache_dir: Path | None = None
    limits: InputLimits = field(default_factory=InputLimits)
    """Where parsed signatures and compiled scanner databases are kept between runs."""


def hang_from_paths(request: HangRequest, stdin: BinaryIO | None = None) -> HangReport:
    matcher = compiled_matcher(
        request.rules_dir, backend=request.backend, cache_dir=request.cache_dir
    )
    options = EvidenceOptions(
        world_size=request.world_size,
        rank_hosts=_read_mapping(request.rank_hosts_file),
        capture_times=_read_capture_times(request.capture_times_file),
        capture_from_mtime=request.capture_from_mtime,
        scheduler=request.scheduler,
        limits=request.limits,
    )
    return hang_view(assemble(request.paths, matcher, options, stdin=stdin))


def hang_view(evidence: Evidence) -> HangReport:
    """The hang report of the evidence; InputError when it holds no usable dump."""
    problems = _misfits(evidence.inputs, tried=not evidence.dumps)
    if evidence.hang is None and evidence.hang_problems:
        raise InputError(evidence.hang_problems[0])
    if evidence.hang is None:
        reasons = "; ".join([*evidence.warnings, *problems])
        raise InputError(
            "no usable Flight Recorder dump: "
            + (reasons or "no Flight Recorder dump among the inputs")
        )
    report = evidence.hang
    ahead = [w for w in evidence.warnings if w not in report.warnings] + problems
    if ahead:
        report = report.model_copy(update={"warnings": [*ahead, *report.warnings]})
    return report


def _misfits(inputs: Sequence[ScannedInput], *, tried: bool) -> list[str]:
    """Why inputs that may have been meant as dumps are not: empty files, `.pkl` files that are
    not pickles and, when no dump was found at all, JSON files that are not dumps."""
    suffixes = (".pkl", ".pickle", ".json") if tried else (".pkl", ".pickle")
    problems = []
    for scanned in inputs:
        if scanned.dump is not None:
            continue
        if scanned.bytes == 0:
            problems.append(f"{scanned.name}: empty file, not a Flight Recorder dump")
        elif scanned.name.lower().endswith(suffixes) and scanned.bytes <= MAX_SIDE_FILE:
            try:
                read_dump(scanned.name, Path(scanned.name).read_bytes())
                problems.append(f"{scanned.name}: a dump with no entries; nothing to compare")
            except (DumpError, OSError) as error:
                problems.append(
                    str(error) if isinstance(error, DumpError) else f"{scanned.name}: {error}"
                )
    return problems


def _read_side_file(path: Path, what: str) -> str:
    try:
        if path.stat().st_size > MAX_SIDE_FILE:
            raise InputError(f"{path}: {what} over {MAX_SIDE_FILE} bytes")
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: cannot read the {what} ({error})") from None


def _read_mapping(path: Path | None) -> dict[int, Any]:
    if path is None:
        return {}
    return parse_mapping(_read_side_file(path, "rank-hosts file"), str(path))


def _read_capture_times(path: Path | None) -> dict[str, float]:
    """`{"fr_dump_0": 1796022330.9, "fr_dump_1": "2026-11-30T07:05:30Z"}`: epoch seconds or
    ISO 8601 with a time zone, keyed by dump path or file name."""
    if path is None:
        return {}
    try:
        raw = json.loads(_read_side_file(path, "capture-times file"))
    except ValueError as error:
        raise InputError(f"{path}: not JSON ({error})") from None
    if not isinstance(raw, dict):
        raise InputError(f"{path}: expected an object of dump name to capture time")
    times: dict[str, float] = {}
    for name, value in raw.items():
        seconds = _seconds(value)
        if seconds is None:
            raise InputError(f"{path}: {name!r}: {value!r} is neither epoch seconds nor ISO 8601")
        times[str(name)] = seconds
    return times


def _seconds(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return moment.timestamp() if moment.tzinfo is not None else None
    return None
