"""Reads one PyTorch Flight Recorder dump, pickled or JSON, into plain typed records.

Consumes a dump's name (its path, which states the rank and sometimes the host) and its bytes;
produces a `FrDump`, or raises `DumpError` with one clear sentence. Pickles go through the
restricted loader in `plain_pickle`, never the standard unpickler.

Formats, as torch's source writes them (torch/csrc/distributed/c10d/FlightRecorder*.hpp and its
predecessors in NCCLUtils.hpp / TraceUtils.h):
- "1.x" (torch 2.2): entries carry `seq_id` and an integer `pg_id`, no `process_group`;
  `pg_config` maps an integer pg id to a list of ranks; no `pg_status`.
- "2.x" up to "2.10" (torch 2.3 onwards): entries carry `process_group` (name, description),
  `collective_seq_id`, `p2p_seq_id`, `is_p2p`, dtypes, `timeout_ms`; `pg_config` maps a group
  name to {name, desc, ranks: "[0, 1]"}; `pg_status` maps a pg id to its last enqueued, started
  and completed sequence ids. "2.7" names the library version `nccl_version`, "2.10"
  `comm_lib_version`, and adds `thread_id` and `thread_name`.
- JSON (`_dump_fr_trace_json`): the same fields without stack frames; `process_group` is a list,
  `pg_status` values are strings, an unknown discovery time is 0 instead of None, and the
  `entries` key is left out when there are none.
A newer major version is read as 2.x, with a note. The rank is not in the dump: torch names each
file `<prefix><rank>`, so the rank comes from the name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from denpex.errors import InputError
from denpex.events import Attribution
from denpex.hang.plain_pickle import PickleLimits, check_plain, load_plain
from denpex.ingest.attribution import attribution_from_path
from denpex.ingest.numbers import identifier


def utc_at(seconds: float | None) -> datetime | None:
    """A dump's time in UTC; None where there is none, or where no calendar holds it (a corrupt
    or hostile dump's `time_created_ns` of 10**20: the year 10000 and beyond)."""
    if seconds is None:
        return None
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (ValueError, OverflowError, OSError):
        return None


class DumpError(InputError):
    """A file given as a Flight Recorder dump cannot be used as one."""


@dataclass(slots=True)
class Collective:
    """One Flight Recorder entry: a collective or point-to-point op one rank enqueued.

    Not mutated after it is read. Not declared frozen: a dump holds thousands of entries, and a
    frozen dataclass sets each of its 19 fields through `object.__setattr__`, which made building
    one cost three times as much (hang triage at 4,096 ranks builds 840,000)."""

    record_id: int
    group: str
    """The process group's name (`process_group[0]`; the pg id in 1.x dumps)."""
    group_desc: str
    pg_id: int | None
    seq: int
    """`collective_seq_id` (`seq_id` in 1.x): equal on every member for the same collective."""
    p2p_seq: int | None
    is_p2p: bool
    op: str
    """`profiling_name`, e.g. `gloo:all_reduce`, `nccl:_allgather_base`."""
    input_sizes: tuple[tuple[int, ...], ...]
    output_sizes: tuple[tuple[int, ...], ...]
    input_dtypes: tuple[str, ...]
    output_dtypes: tuple[str, ...]
    state: str | None
    created_ns: int | None
    started_ns: int | None
    completed_ns: int | None
    retired: bool | None
    timeout_ms: int | None
    frames: Any = field(default=None, compare=False, repr=False)
    """The entry's stack frames as the dump holds them (pickles only); read on demand."""

    @property
    def call_site(self) -> str | None:
        """The innermost stack frame outside torch, as `file:line in function`."""
        return _call_site(self.frames)


@dataclass(frozen=True, slots=True)
class GroupConfig:
    name: str
    desc: str
    ranks: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class GroupStatus:
    last_enqueued: int | None
    last_started: int | None
    last_completed: int | None


@dataclass(frozen=True)
class FrDump:
    source: str
    rank: int | None
    host: str | None
    format: Literal["pickle", "json"]
    version: str
    comm_lib_version: str | None
    configs: Mapping[str, GroupConfig]
    """Groups whose membership the dump states, by group name."""
    status: Mapping[int, GroupStatus]
    """Per pg id, the progress counters torch keeps beside the ring buffer."""
    entries: tuple[Collective, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def tracks_state(self) -> bool:
        """Whether entries record discovery of start and completion (NCCL does; Gloo never does,
        its entries stay `scheduled`), so that `state` can be believed."""
        return any(
            e.started_ns is not None or e.completed_ns is not None or e.state != "scheduled"
            for e in self.entries
            if e.state is not None
        )

    @property
    def newest_ns(self) -> int | None:
        times = [e.created_ns for e in self.entries if e.created_ns is not None]
        return max(times) if times else None


# --- reading ------------------------------------------------------------------------------------

_PICKLE_HEAD = re.compile(rb"\A\x80[\x02-\x05]")
_DUMP_SUFFIXES = (".pkl", ".pickle", ".json", ".bin")
_TRAILING_NUMBER = re.compile(r"(\d+)$")
_RANKS_TEXT = re.compile(r"\[\s*(?:\d+\s*(?:,\s*\d+\s*)*)?\]")
MAX_NAME = 200


def read_dump(name: str, data: bytes, limits: PickleLimits | None = None) -> FrDump:
    """The dump `data`, read from the file `name`. Raises `DumpError` for anything unusable."""
    limits = limits or PickleLimits()
    if not data:
        raise DumpError(f"{name}: empty file, not a Flight Recorder dump")
    if len(data) > limits.max_bytes:
        raise DumpError(f"{name}: {len(data)} bytes, over the {limits.max_bytes}-byte dump bound")
    if _PICKLE_HEAD.match(data):
        try:
            raw = load_plain(data, limits)
        except InputError as error:
            raise DumpError(f"{name}: {error}") from None
        return _normalise(name, raw, "pickle")
    if data.lstrip()[:1] == b"{":
        # Every object or array opens with a byte of its own: their count bounds the memory
        # before anything is built (`{}` is 64 bytes of Python for 2 of JSON).
        containers = data.count(b"{") + data.count(b"[")
        if containers > limits.max_containers:
            raise DumpError(
                f"{name}: JSON that could hold {containers} objects and arrays, over the bound "
                f"of {limits.max_containers} (the max_dump_containers limit)"
            )
        try:
            raw = json.loads(data)
            check_plain(raw, limits.max_depth, "JSON")
        except (ValueError, RecursionError) as error:
            raise DumpError(f"{name}: not valid JSON ({_clip(str(error))})") from None
        except InputError as error:
            raise DumpError(f"{name}: {error}") from None
        return _normalise(name, raw, "json")
    raise DumpError(f"{name}: neither a pickle nor JSON, not a Flight Recorder dump")


def rank_from_name(name: str, who: Attribution | None = None) -> int | None:
    """The rank a dump's file name states: `rank3` anywhere in it, or the number it ends with
    (torch writes `<prefix><rank>`, e.g. `nccl_trace_rank_3`, `fr_dump_3`). `who`: the name's
    attribution, when the caller already has it."""
    stated = (who or attribution_from_path(name)).rank
    if stated is not None:
        return stated
    base = name.rsplit("/", 1)[-1]
    for suffix in _DUMP_SUFFIXES:
        if base.lower().endswith(suffix):
            base = base[: -len(suffix)]
            break
    found = _TRAILING_NUMBER.search(base)
    return identifier(found.group(1)) if found else None


def _normalise(name: str, raw: Any, form: Literal["pickle", "json"]) -> FrDump:
    if not isinstance(raw, dict) or not ("entries" in raw or "version" in raw):
        raise DumpError(
            f"{name}: {form} that is not a Flight Recorder dump (no version, no entries)"
        )
    version = raw.get("version")
    if not isinstance(version, str) or not re.fullmatch(r"\d+\.\d+", version):
        raise DumpError(
            f"{name}: Flight Recorder version {_clip(repr(version))} is not 'major.minor'"
        )
    major = int(version.split(".")[0])
    notes: list[str] = []
    if major > 2:
        notes.append(f"format version {version} is newer than 2.x; read as 2.x")
    entries_raw = raw.get("entries", [])
    if not isinstance(entries_raw, list):
        raise DumpError(f"{name}: 'entries' is {type(entries_raw).__name__}, not a list")
    entries: list[Collective] = []
    skipped = 0
    for item in entries_raw:
        entry = _entry(item, major)
        if entry is None:
            skipped += 1
        else:
            entries.append(entry)
    if skipped:
        notes.append(f"{skipped} of {len(entries_raw)} entries are malformed and were left out")
    if entries_raw and not entries:
        raise DumpError(f"{name}: none of its {len(entries_raw)} entries is readable")
    configs, config_notes = _configs(raw.get("pg_config"), major)
    notes += config_notes
    who = attribution_from_path(name)
    library = raw.get("comm_lib_version", raw.get("nccl_version"))
    return FrDump(
        source=name,
        rank=rank_from_name(name, who),
        host=who.host,
        format=form,
        version=version,
        comm_lib_version=library if isinstance(library, str) and library else None,
        configs=configs,
        status=_status(raw.get("pg_status")),
        entries=tuple(sorted(entries, key=lambda e: e.record_id)),
        notes=tuple(notes),
    )


def _entry(item: Any, major: int) -> Collective | None:
    """One entry, or None when a field the analysis needs is missing or of the wrong type.

    Written for speed (a dump of 4,096 ranks holds 840,000 entries): each field is taken once,
    an int that is already an int skips `_int`, and the entry is built positionally."""
    if type(item) is not dict:
        return None
    get = item.get
    seq = get("collective_seq_id" if major >= 2 else "seq_id")
    if type(seq) is not int:
        seq = _int(seq)
        if seq is None:
            seq = _int(get("seq_id"))
    op = get("profiling_name")
    if seq is None or not isinstance(op, str):
        return None
    pg_id = get("pg_id")
    if type(pg_id) is not int:
        pg_id = _int(pg_id)
    group, desc = _group_of(item, pg_id)
    if group is None:
        return None
    record_id = get("record_id")
    if type(record_id) is not int:
        record_id = _int(record_id)
    p2p_seq = get("p2p_seq_id")
    created = get("time_created_ns")
    started = get("time_discovered_started_ns")
    completed = get("time_discovered_completed_ns")
    timeout = get("timeout_ms")
    state = get("state")
    retired = get("retired")
    return Collective(
        record_id if record_id is not None else -1,
        group,
        desc,
        pg_id,
        seq,
        p2p_seq if type(p2p_seq) is int else _int(p2p_seq),
        get("is_p2p") is True,
        op if len(op) <= 120 else _clip(op, 120),
        _sizes(get("input_sizes")),
        _sizes(get("output_sizes")),
        _strings(get("input_dtypes")),
        _strings(get("output_dtypes")),
        state if isinstance(state, str) else None,
        (created or None) if type(created) is int else None if created is None else _time(created),
        (started or None) if type(started) is int else None if started is None else _time(started),
        (completed or None)
        if type(completed) is int
        else None
        if completed is None
        else _time(completed),
        retired if isinstance(retired, bool) else None,
        timeout if type(timeout) is int else _int(timeout),
        get("frames"),
    )


def _group_of(item: dict[str, Any], pg_id: int | None) -> tuple[str | None, str]:
    named = item.get("process_group")
    if (
        isinstance(named, list | tuple)
        and len(named) == 2
        and isinstance(named[0], str)
        and isinstance(named[1], str)
    ):
        name, desc = named
        if len(name) <= MAX_NAME and len(desc) <= MAX_NAME:
            return name, desc
        return _clip(name, MAX_NAME), _clip(desc, MAX_NAME)
    if pg_id is not None:  # 1.x dumps name groups by id only
        return str(pg_id), ""
    return None, ""


def _configs(raw: Any, major: int) -> tuple[dict[str, GroupConfig], list[str]]:
    """Group memberships the dump states. Gloo records every group under the key '' before the
    group is named (the last one created wins), so such a record cannot be attributed and is
    set aside."""
    if not isinstance(raw, dict):
        return {}, []
    configs: dict[str, GroupConfig] = {}
    notes: list[str] = []
    for key, value in raw.items():
        if major < 2 and isinstance(key, int) and isinstance(value, list):
            ranks = tuple(r for r in value if _int(r) is not None)
            configs[str(key)] = GroupConfig(str(key), "", ranks)
            continue
        if not isinstance(value, dict):
            continue
        group = value.get("name", key)
        ranks = _ranks(value.get("ranks"))
        if not isinstance(group, str) or not group:
            notes.append("pg_config holds a group recorded before it was named (Gloo); set aside")
            continue
        if ranks:
            desc = value.get("desc")
            configs[group] = GroupConfig(group, desc if isinstance(desc, str) else "", ranks)
    return configs, notes


def _ranks(raw: Any) -> tuple[int, ...]:
    """`"[0, 1, 2]"` (how 2.x writes it) or a list of ints; never evaluated as code."""
    if isinstance(raw, str) and len(raw) < 1_000_000 and _RANKS_TEXT.fullmatch(raw.strip()):
        return tuple(int(n) for n in re.findall(r"\d+", raw))
    if isinstance(raw, list) and all(_int(r) is not None for r in raw):
        return tuple(raw)
    return ()


def _status(raw: Any) -> dict[int, GroupStatus]:
    if not isinstance(raw, dict):
        return {}
    status: dict[int, GroupStatus] = {}
    for key, value in raw.items():
        pg_id = _int(key)
        if pg_id is None or not isinstance(value, dict):
            continue
        status[pg_id] = GroupStatus(
            last_enqueued=_seq(value.get("last_enqueued_collective")),
            last_started=_seq(value.get("last_started_collective")),
            last_completed=_seq(value.get("last_completed_collective")),
        )
    return status


_DECIMAL = re.compile(r"-?\d{1,19}")


def _int(value: Any) -> int | None:
    """An int from an int (not a bool) or a decimal string (JSON dumps write some numbers as
    strings)."""
    if type(value) is int:
        return value
    if type(value) is str and _DECIMAL.fullmatch(value):
        return int(value)
    return None


def _seq(value: Any) -> int | None:
    """A sequence id; torch writes -1 for 'none yet'."""
    number = _int(value)
    return number if number is not None and number >= 0 else None


def _time(value: Any) -> int | None:
    """Nanoseconds since the epoch; None and 0 (the JSON dump's 'unknown') mean unknown."""
    number = _int(value)
    return number if number else None


def _sizes(raw: Any) -> tuple[tuple[int, ...], ...]:
    """The shapes in `raw` that are lists of ints. Plain loops: an entry's shapes are one or
    two short lists, too small for anything else to pay (two per entry, 840,000 entries at
    4,096 ranks)."""
    if type(raw) is not list:
        return ()
    shapes = []
    for shape in raw:
        if type(shape) is list:
            dims = tuple(shape)
            for dim in dims:
                if type(dim) is not int:
                    break
            else:
                shapes.append(dims)
    return tuple(shapes)


def _strings(raw: Any) -> tuple[str, ...]:
    if type(raw) is not list:
        return ()
    for item in raw:
        if type(item) is not str or len(item) > 40:
            return tuple(_clip(s, 40) for s in raw if isinstance(s, str))
    return tuple(raw)


_TORCH_FRAME = re.compile(r"(?:^|/)torch/(?:distributed|nn/parallel|utils|_dynamo|autograd)/")


def frame_outside_torch(frames: Any) -> dict[str, Any] | None:
    """The first frame, innermost first, that is not inside torch's own distributed code (the
    only one a call site is read from: a node-side summary of a dump keeps just that one)."""
    if not isinstance(frames, list):
        return None
    for frame in frames:
        if not isinstance(frame, dict):
            continue
        filename = frame.get("filename")
        if isinstance(filename, str) and not _TORCH_FRAME.search(filename):
            return frame
    return None


def _call_site(frames: Any) -> str | None:
    frame = frame_outside_torch(frames)
    if frame is None:
        return None
    filename, line, function = frame["filename"], frame.get("line"), frame.get("name")
    where = f"{_clip(filename, MAX_NAME)}:{line if isinstance(line, int) else '?'}"
    return f"{where} in {_clip(function, 80)}" if isinstance(function, str) else where


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
