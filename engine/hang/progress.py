"""Each rank's progress in each process group, as its Flight Recorder dump shows it.

Consumes one dump per rank (with the moment it was captured, when known) and the ranks the job
is expected to have; produces, per group, its members and each member's last enqueued, started
and completed sequence ids and the first collective it has not finished.

Completion is read differently per backend. NCCL records when it discovers that a collective
started and completed (`state`), and a retired entry that is not completed timed out. Gloo
records neither: `state` stays `scheduled`, and `retired` (with `pg_status`) turns true when the
work finishes, successfully or not. So for Gloo a retired entry whose timeout had elapsed when
the dump was captured may be a failure, and a rank that "finished" the collective its peers wait
in, without moving on, may only have failed out of it: such completions are `uncertain`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from denpex.hang.dumps import Collective, FrDump
from denpex.timeline.identity import world_size_from_ranks

NS_PER_S = 1_000_000_000


@dataclass(frozen=True)
class Capture:
    """A rank's dump and when it was taken (epoch seconds), if anyone recorded that."""

    dump: FrDump
    captured_at: float | None = None

    @property
    def rank(self) -> int:
        assert self.dump.rank is not None
        return self.dump.rank


@dataclass
class RankInGroup:
    rank: int
    capture: Capture
    entries: list[Collective]
    """This group's collective (not point-to-point) entries, oldest first."""
    by_seq: dict[int, list[Collective]]
    last_enqueued: int | None
    last_started: int | None
    last_completed: int | None
    uncertain: set[int] = field(default_factory=set)
    """Sequence ids whose completion cannot be told from a failure (Gloo, after the timeout)."""

    @property
    def pending(self) -> Collective | None:
        """The first entry of this group the rank has not completed."""
        done = -1 if self.last_completed is None else self.last_completed
        for entry in self.entries:
            if entry.seq > done:
                return entry
        return None

    @property
    def next_seq(self) -> int | None:
        """The first sequence id the rank has not completed."""
        if self.last_completed is not None:
            return self.last_completed + 1
        return self.entries[0].seq if self.entries else None


@dataclass
class Group:
    name: str
    desc: str
    members: tuple[int, ...]
    members_from: str
    present: dict[int, RankInGroup]
    """Members with a dump, by rank."""

    @property
    def absent_dumps(self) -> tuple[int, ...]:
        return tuple(r for r in self.members if r not in self.present)


def expected_ranks(
    captures: Sequence[Capture],
    world_size: int | None,
    named: Iterable[int] = (),
    inferred_from: str | None = None,
) -> tuple[tuple[int, ...], str, list[str]]:
    """The job's ranks, where the evidence says so, and what could not be known. `named`: ranks
    that file names show existed even though their dump could not be read. A `world_size`
    `inferred_from` the other inputs is a lower bound that the dumps' pg_config overrides."""
    if world_size is not None and inferred_from is None:
        return tuple(range(world_size)), "the world size given", []
    stated: set[int] = set()
    for capture in captures:
        for config in capture.dump.configs.values():
            if config.desc == "default_pg" or config.name == "0":
                stated.update(config.ranks)
    if stated:
        return tuple(sorted(stated)), "the default group's pg_config", []
    named_ranks = {c.rank for c in captures} | set(named)
    if world_size_from_ranks(named_ranks) is None:
        return (
            tuple(sorted(named_ranks)),
            "the ranks the dumps' names state",
            [
                f"world size unknown: rank {max(named_ranks)} in a dump's name is far past the "
                f"other {len(named_ranks) - 1} rank(s), so only the named ranks are expected "
                "(pass --world-size)"
            ],
        )
    top = max(named_ranks)
    if world_size is not None and inferred_from is not None and world_size > top:
        notes = [
            f"world size not stated by the dumps (Gloo dumps do not record group membership): "
            f"ranks 0-{world_size - 1} are expected from {inferred_from}; a missing rank above "
            f"{world_size - 1} would go unnoticed (pass --world-size)"
        ]
        return tuple(range(world_size)), inferred_from, notes
    notes = [
        f"world size unknown (Gloo dumps do not record group membership): ranks 0-{top} are "
        f"expected from the dumps' names; a missing rank above {top} would go unnoticed "
        "(pass --world-size)"
    ]
    return tuple(range(top + 1)), "the highest rank a dump's name states", notes


def build_groups(
    captures: Mapping[int, Capture], expected: tuple[int, ...]
) -> tuple[list[Group], list[str]]:
    """Every process group the dumps mention, with its members and their progress."""
    notes: list[str] = []
    descs: dict[str, str] = {}
    mentioned: dict[str, set[int]] = {}
    stated: dict[str, set[int]] = {}
    for rank, capture in captures.items():
        for entry in capture.dump.entries:
            descs.setdefault(entry.group, entry.group_desc)
            mentioned.setdefault(entry.group, set()).add(rank)
        for name, config in capture.dump.configs.items():
            stated.setdefault(name, set()).update(config.ranks)
            descs.setdefault(name, config.desc)
    groups = []
    for name in sorted(mentioned, key=_group_order):
        desc = descs.get(name, "")
        if stated.get(name):
            members, source = tuple(sorted(stated[name])), "pg_config"
        elif desc == "default_pg" or name == "0":
            members, source = expected, "world"
        else:
            members, source = tuple(sorted(mentioned[name])), "dumps"
            if len(mentioned[name]) < len(captures) and len(captures) < len(expected):
                notes.append(
                    f"group {name} ({desc or 'no description'}): membership is known only from "
                    "the dumps that mention it; ranks without a dump may belong to it too"
                )
        present = {
            rank: _progress(rank, captures[rank], name) for rank in members if rank in captures
        }
        groups.append(Group(name, desc, members, source, present))
    return groups, notes


def _group_order(name: str) -> tuple[int, str]:
    return (int(name), "") if name.isdigit() else (1 << 62, name)


def _progress(rank: int, capture: Capture, group: str) -> RankInGroup:
    dump = capture.dump
    mine = [e for e in dump.entries if e.group == group]
    entries = [e for e in mine if not _is_p2p(e)]
    by_seq: dict[int, list[Collective]] = {}
    for entry in entries:
        by_seq.setdefault(entry.seq, []).append(entry)
    pg_ids = {e.pg_id for e in mine if e.pg_id is not None}
    status = next((dump.status[i] for i in pg_ids if i in dump.status), None)
    last_enqueued = max((e.seq for e in entries), default=None)
    if status is not None and status.last_enqueued is not None:
        last_enqueued = max(status.last_enqueued, last_enqueued or 0)
    completed, uncertain = _completions(entries, capture, dump.tracks_state)
    last_completed = max(completed, default=None)
    # pg_status also counts failures (Gloo); believe it only for entries no longer in the buffer.
    if (
        status is not None
        and status.last_completed is not None
        and status.last_completed not in by_seq
    ):
        last_completed = max(status.last_completed, last_completed or 0)
    started = [e.seq for e in entries if e.started_ns is not None or e.state == "started"]
    last_started = max(started + list(completed), default=None) if dump.tracks_state else None
    if status is not None and status.last_started is not None:
        last_started = max(status.last_started, last_started or 0)
    return RankInGroup(
        rank=rank,
        capture=capture,
        entries=entries,
        by_seq=by_seq,
        last_enqueued=last_enqueued,
        last_started=last_started,
        last_completed=last_completed,
        uncertain=uncertain,
    )


def _completions(
    entries: list[Collective], capture: Capture, tracks_state: bool
) -> tuple[set[int], set[int]]:
    """Sequence ids the rank completed, and those whose completion may have been a failure."""
    completed: set[int] = set()
    uncertain: set[int] = set()
    newest_seq = max((e.seq for e in entries), default=None)
    for entry in entries:
        if tracks_state:
            if entry.state == "completed" or entry.completed_ns is not None:
                completed.add(entry.seq)
            continue
        if entry.retired is not True:
            continue
        moved_on = newest_seq is not None and entry.seq < newest_seq
        if moved_on or not _timed_out_by_capture(entry, capture.captured_at):
            completed.add(entry.seq)
        else:
            uncertain.add(entry.seq)
    # A collective is complete only when every one before it is.
    return completed - {s for s in completed if any(u < s for u in uncertain)}, uncertain


def _timed_out_by_capture(entry: Collective, captured_at: float | None) -> bool:
    if captured_at is None or entry.created_ns is None or entry.timeout_ms is None:
        return False
    return captured_at * NS_PER_S - entry.created_ns >= entry.timeout_ms * 1_000_000


def _is_p2p(entry: Collective) -> bool:
    return entry.is_p2p or _p2p_op(entry.op)


@functools.lru_cache(maxsize=4096)
def _p2p_op(op: str) -> bool:
    """Whether `op` (`gloo:send`, `nccl:recv`) is point-to-point; a dump names a handful of ops
    over thousands of entries, so each is split once."""
    return op.rsplit(":", 1)[-1] in ("send", "recv", "recvAnysource", "recv_anysource")
