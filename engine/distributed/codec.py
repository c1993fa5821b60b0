"""A scanned input as plain JSON data, and back: what crosses a process, a broker or a network.

Consumes `ScannedInput`s (one input's matches with their events, the abnormal lines, progress
records, what was dropped, its digest and its Flight Recorder dump); produces dicts of strings,
numbers, lists and None that `json` writes and reads exactly (floats round-trip), and the
`ScannedInput`s again, with every match tied to the signature of the same id in the reader's
library. Nothing is pickled on the way: the JSON is the contract between a node, a worker and
the process that assembles the evidence.

A dump is carried as its summary: the plain data it holds, each entry's stack frames cut to the
one frame a call site is read from, written again as a pickle of plain data that the restricted
reader reads back into the same records (a dump that cannot be read is carried as its first
bytes, to be refused in the same words).
"""

from __future__ import annotations

import base64
import json
import pickle
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from denpex.errors import InputError
from denpex.events import Attribution, Event, Match
from denpex.hang.dumps import frame_outside_torch
from denpex.hang.plain_pickle import PickleLimits, load_plain
from denpex.match.scan import ScannedInput
from denpex.progress.formats import Point
from denpex.progress.series import ProgressRecord
from denpex.signatures.library import Library
from denpex.signatures.signature import Signature

RAW_DUMP_KEPT = 1024 * 1024
"""Bytes of an unreadable dump carried, so the reader refuses it for the same reason."""


class CodecError(InputError):
    """Scanned evidence that does not decode: another version, another library, damage."""


# --- encoding ---------------------------------------------------------------------------------


def _who(who: Attribution) -> list[Any]:
    return [who.rank, who.local_rank, who.host, who.pid]


def _event(event: Event) -> dict[str, Any]:
    return {
        "source": event.source,
        "line": event.line,
        "offset": event.offset,
        "text": event.text,
        "who": _who(event.who),
        "time": event.time,
        "time_inferred": event.time_inferred,
        "boot_seconds": event.boot_seconds,
        "context": list(event.context),
    }


def _match(match: Match) -> dict[str, Any]:
    return {
        "signature": match.signature.id,
        "event": _event(match.event),
        "captures": dict(match.captures),
    }


def _progress(record: ProgressRecord) -> dict[str, Any]:
    point = record.point
    return {
        "source": record.source,
        "line": record.line,
        "who": _who(record.who),
        "time": record.time,
        "text": record.text,
        "point": {
            "format_id": point.format_id,
            "step": point.step,
            "values": dict(point.values),
            "rank": point.rank,
            "layer": point.layer,
            "checksum": point.checksum,
        },
    }


def encode_input(scanned: ScannedInput) -> dict[str, Any]:
    return {
        "name": scanned.name,
        "relative": scanned.relative,
        "kind": scanned.kind,
        "bytes": scanned.bytes,
        "lines": scanned.lines,
        "matches": [_match(m) for m in scanned.matches],
        "dropped": [[sid, rank, count] for (sid, rank), count in scanned.dropped.items()],
        "dump": dump_summary(scanned.dump) if scanned.dump is not None else None,
        "warnings": list(scanned.warnings),
        "who": _who(scanned.who),
        "first_time": scanned.first_time,
        "progress": [_progress(r) for r in scanned.progress],
        "progress_stride": scanned.progress_stride,
        "telemetry": scanned.telemetry,
        "abnormal": [_match(m) for m in scanned.abnormal],
        "digest": scanned.digest,
        "default_year": scanned.default_year,
        "year_stated": scanned.year_stated,
    }


# --- dumps ------------------------------------------------------------------------------------


def dump_summary(data: bytes) -> dict[str, Any]:
    """What hang triage reads of a dump, as plain data; the unreadable kept as first bytes."""
    if data[:1] == b"\x80":
        try:
            raw = load_plain(data, PickleLimits())
        except InputError:
            raw = None
        if raw is not None:
            return {"pickle": _tagged(_frames_cut(raw))}
    elif data.lstrip()[:1] == b"{":
        try:
            return {"json": json.loads(data)}
        except (ValueError, RecursionError):
            pass
    return {
        "raw": base64.b64encode(data[:RAW_DUMP_KEPT]).decode("ascii"),
        "bytes": len(data),
    }


def dump_bytes(summary: Mapping[str, Any]) -> bytes:
    """A dump the hang triage reads exactly as it read the original."""
    if "pickle" in summary:
        return pickle.dumps(_untagged(summary["pickle"]), protocol=4)
    if "json" in summary:
        return json.dumps(summary["json"]).encode()
    return base64.b64decode(summary["raw"])


def _frames_cut(raw: Any) -> Any:
    if not isinstance(raw, dict) or not isinstance(raw.get("entries"), list):
        return raw
    entries = []
    for entry in raw["entries"]:
        if isinstance(entry, dict) and "frames" in entry:
            frame = frame_outside_torch(entry["frames"])
            entry = {**entry, "frames": [frame] if frame is not None else []}
        entries.append(entry)
    return {**raw, "entries": entries}


def _tagged(value: Any) -> Any:
    """JSON for the plain data a dump holds: tuples, bytes and non-string keys say what they
    were, so the pickle written back holds the same values."""
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            return {"d": {k: _tagged(v) for k, v in value.items()}}
        return {"k": [[_tagged(k), _tagged(v)] for k, v in value.items()]}
    if isinstance(value, list):
        return [_tagged(v) for v in value]
    if isinstance(value, tuple):
        return {"t": [_tagged(v) for v in value]}
    if isinstance(value, bytes):
        return {"b": base64.b64encode(value).decode("ascii")}
    return value


def _untagged(value: Any) -> Any:
    if isinstance(value, list):
        return [_untagged(v) for v in value]
    if isinstance(value, dict):
        if "d" in value:
            return {k: _untagged(v) for k, v in value["d"].items()}
        if "k" in value:
            return {_untagged(k): _untagged(v) for k, v in value["k"]}
        if "t" in value:
            return tuple(_untagged(v) for v in value["t"])
        if "b" in value:
            return base64.b64decode(value["b"])
        raise CodecError(f"a dump summary holds an unknown value {sorted(value)}")
    return value


# --- decoding ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Signatures:
    """The signatures a scan's matches name, by id (the library's and the abnormal-line
    lexicon's), and the labels of the two libraries they come from."""

    library: Mapping[str, Signature]
    lexicon: Mapping[str, Signature]
    rules: str
    lexicon_label: str

    @classmethod
    def of(cls, library: Library, lexicon: Library) -> Signatures:
        return cls(library.by_id(), lexicon.by_id(), library.label, lexicon.label)


def _attribution(value: list[Any]) -> Attribution:
    rank, local_rank, host, pid = value
    return Attribution(rank=rank, local_rank=local_rank, host=host, pid=pid)


def _decoded_match(value: Mapping[str, Any], signatures: Mapping[str, Signature]) -> Match:
    signature = signatures.get(value["signature"])
    if signature is None:
        raise CodecError(
            f"a match names signature {value['signature']!r}, which this library lacks: "
            "the evidence was scanned with another version of the rules"
        )
    event = value["event"]
    return Match(
        signature=signature,
        event=Event(
            source=event["source"],
            line=event["line"],
            offset=event["offset"],
            text=event["text"],
            who=_attribution(event["who"]),
            time=event["time"],
            time_inferred=event["time_inferred"],
            boot_seconds=event["boot_seconds"],
            context=tuple(event["context"]),
        ),
        captures=dict(value["captures"]),
    )


def _decoded_progress(value: Mapping[str, Any]) -> ProgressRecord:
    point = value["point"]
    return ProgressRecord(
        source=value["source"],
        line=value["line"],
        who=_attribution(value["who"]),
        time=value["time"],
        text=value["text"],
        point=Point(
            format_id=point["format_id"],
            step=point["step"],
            values=dict(point["values"]),
            rank=point["rank"],
            layer=point["layer"],
            checksum=point["checksum"],
        ),
    )


def decode_input(value: Mapping[str, Any], signatures: Signatures) -> ScannedInput:
    try:
        return ScannedInput(
            name=value["name"],
            relative=value["relative"],
            kind=value["kind"],
            bytes=value["bytes"],
            lines=value["lines"],
            matches=[_decoded_match(m, signatures.library) for m in value["matches"]],
            dropped={(sid, rank): count for sid, rank, count in value["dropped"]},
            dump=dump_bytes(value["dump"]) if value["dump"] is not None else None,
            warnings=list(value["warnings"]),
            who=_attribution(value["who"]),
            first_time=value["first_time"],
            progress=[_decoded_progress(r) for r in value["progress"]],
            progress_stride=int(value.get("progress_stride", 1)),
            telemetry=list(value.get("telemetry", [])),
            abnormal=[_decoded_match(m, signatures.lexicon) for m in value["abnormal"]],
            digest=value["digest"],
            default_year=value["default_year"],
            year_stated=value["year_stated"],
        )
    except CodecError:
        raise
    except (KeyError, TypeError, ValueError) as error:
        raise CodecError(
            f"scanned evidence that does not decode ({type(error).__name__}: {error})"
        ) from None
