"""From group progress to candidate explanations of a hang: who the others wait for, and why.

Consumes the groups `progress` built (members, each present member's sequence progress) and the
ranks whose dump is missing or older than the hang; produces ranked `Candidate`s (before
hardware correlation) and, per group, the first sequence id some member did not finish.

Per group, the *stuck* collective is the lowest sequence id that some member has not completed
although a member has enqueued it. Then:
- members that never enqueued it are `never_entered`, unless they are blocked inside an
  unfinished collective of another group, which makes them `stalled` there (a consequence);
- members that entered it with a different op, sizes or dtypes (checked at every sequence id the
  dumps share, since a size mismatch can also "complete" wrongly) are `mismatched`, the minority
  against the majority; a tie keeps both sides;
- members with no dump, or a dump taken before the hang, are `stopped_reporting`;
- when none of these explains it, members that did not finish what others finished, or, failing
  that, everyone still inside it, are `stalled`.
Confidences are priors per situation (the constants below), not yet calibrated on enough cases.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from denpex.hang.dumps import Collective
from denpex.hang.models import Candidate, CulpritKind, DumpEvidence
from denpex.hang.progress import NS_PER_S, Capture, Group, RankInGroup

# Priors, per situation. Each is P(the named ranks are where the hang began | this pattern).
NEVER_ENTERED_CLEAR = 0.85
NEVER_ENTERED_WITH_GAPS = 0.6  # some members have no dump: they may be the real cause
NEVER_ENTERED_AFTER_MISMATCH = 0.5
MISMATCH_MAJORITY_OF_ALL = 0.85  # the majority outnumbers every other member, dump or not
MISMATCH_MAJORITY_OF_PRESENT = 0.6
MISMATCH_TIE = 0.4
STOPPED_ONLY_EXPLANATION = 0.8  # everyone with a dump waits; only the silent ranks can be it
STOPPED_PEERS_QUIET = 0.6  # peers finished (or failed out of) everything they entered
STOPPED_WITH_OTHER_EXPLANATION = 0.3
STALLED_BEHIND_PEERS = 0.6
STALLED_BLOCKED_ELSEWHERE = 0.35
MUTUAL_WAIT = 0.4  # two groups wait on each other: either side may have skipped a collective
STALLED_NOT_STARTED = 0.5
STALLED_EVERYONE = 0.25
STALLED_EVERYONE_MAYBE_RUNNING = 0.15

MAX_SOURCES = 3


@dataclass(frozen=True)
class GroupVerdict:
    group: Group
    stuck_seq: int | None
    onset_ns: int | None
    candidates: list[Candidate]
    explained: bool
    """Whether something among the dumps explains the stall (mismatch or never_entered)."""


def judge_groups(
    groups: list[Group], silent: Mapping[int, str], captures: Mapping[int, Capture]
) -> tuple[list[GroupVerdict], list[Candidate]]:
    """Verdicts per group, and the stopped_reporting candidate for `silent` ranks (rank -> why
    silent: no dump, or a dump older than the hang)."""
    verdicts = [_judge(group, groups, silent, captures) for group in groups]
    stopped = _stopped_reporting(verdicts, silent)
    return verdicts, stopped


# --- one group ----------------------------------------------------------------------------------


def _judge(
    group: Group, groups: list[Group], silent: Mapping[int, str], captures: Mapping[int, Capture]
) -> GroupVerdict:
    present = {r: p for r, p in group.present.items() if r not in silent}
    if not present:
        return GroupVerdict(group, None, None, [], False)
    candidates: list[Candidate] = []
    mismatch = _first_mismatch(group, present)
    if mismatch is not None:
        candidates += _mismatch_candidates(group, present, *mismatch)
    stuck = _stuck_seq(present)
    if stuck is None:
        onset = _frontier_time(present)
        return GroupVerdict(group, None, onset, candidates, bool(candidates))
    entered = {r: p for r, p in present.items() if _reached(p.last_enqueued, stuck)}
    absent = sorted(set(present) - set(entered))
    waiting = sorted(r for r, p in entered.items() if not _reached(p.last_completed, stuck))
    onset = _created(entered, waiting or sorted(entered), stuck)
    gaps = [r for r in group.members if r in silent]
    if absent and waiting:
        candidates += _never_entered(
            group, groups, present, absent, waiting, stuck, gaps, mismatch, captures
        )
    explained = bool(candidates)
    if not explained and not gaps and waiting:
        candidates += _stalled(group, present, entered, waiting, stuck, captures)
    return GroupVerdict(group, stuck, onset, candidates, explained)


def _stuck_seq(present: Mapping[int, RankInGroup]) -> int | None:
    """The lowest sequence id some member has not completed while some member enqueued it."""
    frontier = max(
        (p.last_enqueued for p in present.values() if p.last_enqueued is not None), default=None
    )
    if frontier is None:
        return None
    behind = [
        p.next_seq for p in present.values() if p.next_seq is not None and p.next_seq <= frontier
    ]
    return min(behind, default=None)


# --- mismatched ---------------------------------------------------------------------------------

# Ops whose tensor sizes legitimately differ between ranks; only op and dtypes must agree.
_SIZES_DIFFER = {"gather", "scatter", "all_to_all", "alltoall", "alltoall_base", "all_to_allv"}
_OUTPUTS_AGREE = {"all_gather", "allgather", "_allgather_base", "all_gather_into_tensor"}
_INPUTS_AGREE = {"reduce_scatter", "_reduce_scatter_base", "reduce_scatter_tensor"}

Signature = tuple[tuple[object, ...], ...]


def _signature(entries: list[Collective]) -> Signature:
    """What must agree across ranks at one sequence id (several entries when coalesced)."""
    parts = []
    for e in entries:
        op = e.op.rsplit(":", 1)[-1]
        dtypes = (e.input_dtypes, e.output_dtypes)
        if op in _SIZES_DIFFER:
            parts.append((e.op, *dtypes))
        elif op in _OUTPUTS_AGREE:
            parts.append((e.op, e.output_sizes, *dtypes))
        elif op in _INPUTS_AGREE:
            parts.append((e.op, e.input_sizes, *dtypes))
        else:
            parts.append((e.op, e.input_sizes, e.output_sizes, *dtypes))
    return tuple(parts)


def _first_mismatch(
    group: Group, present: Mapping[int, RankInGroup]
) -> tuple[int, list[list[int]]] | None:
    """The earliest shared sequence id where members disagree, with the ranks of each variant,
    largest first. Only ids every present buffer still holds are compared (ring buffers drop
    old entries at different times)."""
    starts = [min(p.by_seq) for p in present.values() if p.by_seq]
    if len(starts) < 2:
        return None
    start = max(starts)
    variants: dict[int, dict[Signature, list[int]]] = {}
    for rank, progress in present.items():
        for seq, entries in progress.by_seq.items():
            if seq >= start:
                variants.setdefault(seq, {}).setdefault(_signature(entries), []).append(rank)
    for seq in sorted(variants):
        if len(variants[seq]) > 1:
            return seq, sorted(variants[seq].values(), key=lambda ranks: (-len(ranks), ranks))
    return None


def _mismatch_candidates(
    group: Group, present: Mapping[int, RankInGroup], seq: int, variants: list[list[int]]
) -> list[Candidate]:
    majority, others = variants[0], variants[1:]
    tie = len(others[0]) == len(majority)
    sides = variants if tie else others
    if tie:
        confidence = MISMATCH_TIE
    elif 2 * len(majority) > len(group.members):
        confidence = MISMATCH_MAJORITY_OF_ALL
    else:
        confidence = MISMATCH_MAJORITY_OF_PRESENT
    candidates = []
    for ranks in sides:
        rest = sorted(r for side in variants if side is not ranks for r in side)
        mine, theirs = present[ranks[0]].by_seq[seq], present[rest[0]].by_seq[seq]
        caveats = []
        if tie:
            caveats.append("as many ranks called each variant; the dumps cannot tell which is odd")
        missing = [r for r in group.members if r not in present]
        if missing:
            caveats.append(
                f"rank(s) {ranks_text(missing)} have no usable dump; what they called at seq "
                f"{seq} is unknown"
            )
        candidates.append(
            Candidate(
                kind=CulpritKind.mismatched,
                ranks=ranks,
                process_group=group.name,
                process_group_desc=group.desc or None,
                seq=seq,
                op=_describe(mine),
                since=_when(_created(present, [*ranks, *rest], seq)),
                confidence=confidence,
                summary=(
                    f"{_who(ranks)} called {_describe(mine)} at seq {seq} of group "
                    f"{_group_label(group)}, where {_who(rest)} called {_describe(theirs)}"
                ),
                evidence=[
                    _evidence(present, ranks, group, seq, f"called {_describe(mine)}"),
                    _evidence(present, rest, group, seq, f"called {_describe(theirs)}"),
                ],
                caveats=caveats,
            )
        )
    return candidates


def _describe(entries: list[Collective]) -> str:
    parts = []
    for e in entries:
        sizes = _shapes(e.input_sizes)
        dtypes = ",".join(sorted(set(e.input_dtypes))) or "-"
        parts.append(f"{e.op} {sizes} {dtypes}")
    return " + ".join(parts)


def _shapes(shapes: tuple[tuple[int, ...], ...]) -> str:
    text = "[" + ", ".join("x".join(map(str, s)) or "scalar" for s in shapes[:4]) + "]"
    return text if len(shapes) <= 4 else text[:-1] + f", ... {len(shapes)} tensors]"


# --- never entered and stalled ------------------------------------------------------------------


def _never_entered(
    group: Group,
    groups: list[Group],
    present: Mapping[int, RankInGroup],
    absent: list[int],
    waiting: list[int],
    stuck: int,
    gaps: list[int],
    mismatch: tuple[int, list[list[int]]] | None,
    captures: Mapping[int, Capture],
) -> list[Candidate]:
    blocked = {r: b for r in absent if (b := _blocked_elsewhere(r, group, groups)) is not None}
    # Ranks blocked in a group that itself waits on one of this group's waiting ranks: a cycle.
    # Each side never entered the other's collective; the dumps cannot tell who went wrong.
    owed = {r: _waits_on(other, entry.seq, waiting) for r, (other, entry) in blocked.items()}
    mutual = [r for r in blocked if owed[r]]
    idle = [r for r in absent if r not in blocked]
    stuck_entries = present[waiting[0]].by_seq.get(stuck, [])
    op = _describe(stuck_entries) if stuck_entries else None
    waiting_evidence = _evidence(
        present,
        waiting,
        group,
        stuck,
        f"entered seq {stuck} ({op}) and {_has(waiting)} not completed it",
    )
    candidates = []
    for ranks, is_mutual in ((idle, False), (mutual, True)):
        if not ranks:
            continue
        caveats = _capture_caveats(ranks, present, stuck_entries, captures)
        if is_mutual:
            confidence = MUTUAL_WAIT
            elsewhere = "; ".join(
                f"rank {r} waits in seq {blocked[r][1].seq} of group "
                f"{_group_label(blocked[r][0])}, which {_who(owed[r])} never entered"
                for r in ranks
            )
            caveats.insert(
                0,
                f"{elsewhere}: the groups wait on each other, so ranks called these groups' "
                "collectives in different orders; either side may be the one that skipped one",
            )
        elif mismatch is not None and mismatch[0] <= stuck:
            confidence = NEVER_ENTERED_AFTER_MISMATCH
        elif gaps:
            confidence = NEVER_ENTERED_WITH_GAPS
        else:
            confidence = NEVER_ENTERED_CLEAR
        if gaps:
            caveats.append(f"rank(s) {ranks_text(gaps)} of this group have no usable dump")
        candidates.append(
            Candidate(
                kind=CulpritKind.never_entered,
                ranks=ranks,
                process_group=group.name,
                process_group_desc=group.desc or None,
                seq=stuck,
                op=op,
                since=_when(_created(present, waiting, stuck)),
                confidence=confidence,
                summary=(
                    f"{_who(ranks)} never called seq {stuck} of group {_group_label(group)}"
                    f"{f' ({op})' if op else ''}, which {_who(waiting)} "
                    f"{_s(waiting, 'waits', 'wait')} in"
                ),
                evidence=[_last_seen(present, ranks, group), waiting_evidence],
                caveats=caveats,
            )
        )
    for rank in mutual:
        del blocked[rank]
    for rank, (other, entry) in blocked.items():
        candidates.append(
            Candidate(
                kind=CulpritKind.stalled,
                ranks=[rank],
                process_group=other.name,
                process_group_desc=other.desc or None,
                seq=entry.seq,
                op=_describe([entry]),
                since=_when(entry.created_ns),
                confidence=STALLED_BLOCKED_ELSEWHERE,
                summary=(
                    f"rank {rank} is blocked in seq {entry.seq} of group {_group_label(other)} "
                    f"and so never reached seq {stuck} of group {_group_label(group)}, which "
                    f"{_who(waiting)} {_s(waiting, 'waits', 'wait')} in; the cause is in group "
                    f"{other.name}"
                ),
                evidence=[
                    _evidence(
                        other.present,
                        [rank],
                        other,
                        entry.seq,
                        f"entered seq {entry.seq} ({_describe([entry])}) and has not completed it",
                    ),
                    waiting_evidence,
                ],
            )
        )
    return candidates


def _waits_on(other: Group, seq: int, ranks: list[int]) -> list[int]:
    """Those of `ranks` that `other`'s collective `seq` waits on (members that never entered)."""
    return [
        r
        for r in ranks
        if (p := other.present.get(r)) is not None and not _reached(p.last_enqueued, seq)
    ]


def _blocked_elsewhere(
    rank: int, group: Group, groups: list[Group]
) -> tuple[Group, Collective] | None:
    """The unfinished collective of another group the rank is inside, if any (the newest)."""
    found: tuple[Group, Collective] | None = None
    for other in groups:
        progress = other.present.get(rank)
        if other is group or progress is None:
            continue
        pending = progress.pending
        if pending is None:
            continue
        if found is None or pending.record_id > found[1].record_id:
            found = (other, pending)
    return found


def _stalled(
    group: Group,
    present: Mapping[int, RankInGroup],
    entered: Mapping[int, RankInGroup],
    waiting: list[int],
    stuck: int,
    captures: Mapping[int, Capture],
) -> list[Candidate]:
    entries = present[waiting[0]].by_seq.get(stuck, [])
    label = f"seq {stuck} of group {_group_label(group)}" + (
        f" ({_describe(entries)})" if entries else ""
    )
    proven = _finished_for_sure(entered, waiting, stuck)
    not_started = _not_started(present, waiting, stuck)
    caveats = []
    if proven:
        ranks, confidence = waiting, STALLED_BEHIND_PEERS
        summary = (
            f"{_who(waiting)} did not finish {label}, which {_who(proven)} finished and moved past"
        )
    elif not_started:
        ranks, confidence = not_started, STALLED_NOT_STARTED
        summary = f"{_who(not_started)} never started {label} on the device; the others did"
    else:
        ranks, confidence = sorted(entered), STALLED_EVERYONE
        summary = (
            f"every member with a dump entered {label} with matching arguments and none finished "
            "it: the dumps do not single out a rank (a transport or device fault, or a straggler "
            "inside the collective)"
        )
        if _maybe_still_running(present, ranks, stuck, captures):
            confidence = STALLED_EVERYONE_MAYBE_RUNNING
            caveats.append(
                "the dumps may have been taken while the collective was running normally"
            )
    evidence = [
        _evidence(present, waiting, group, stuck, f"{_has(waiting)} not completed seq {stuck}")
    ]
    if proven:
        evidence.append(_evidence(present, proven, group, stuck, f"completed seq {stuck}"))
    return [
        Candidate(
            kind=CulpritKind.stalled,
            ranks=ranks,
            process_group=group.name,
            process_group_desc=group.desc or None,
            seq=stuck,
            op=_describe(entries) if entries else None,
            since=_when(_created(present, waiting, stuck)),
            confidence=confidence,
            summary=summary,
            evidence=evidence,
            caveats=caveats,
        )
    ]


def _finished_for_sure(
    entered: Mapping[int, RankInGroup], waiting: list[int], stuck: int
) -> list[int]:
    """Ranks done with the stuck collective in a way that proves success: their backend records
    completion (NCCL), or they went on to a later collective. Gloo marks failed work finished."""
    return [
        r
        for r, p in entered.items()
        if r not in waiting
        and (p.capture.dump.tracks_state or _reached(p.last_enqueued, stuck + 1))
    ]


def _not_started(present: Mapping[int, RankInGroup], waiting: list[int], stuck: int) -> list[int]:
    """With backends that record a kernel's start (NCCL), the waiting ranks whose stuck
    collective never started while other waiting ranks' did."""
    if not all(present[r].capture.dump.tracks_state for r in waiting):
        return []
    idle = [r for r in waiting if (e := present[r].by_seq.get(stuck)) and e[0].state == "scheduled"]
    return idle if len(idle) < len(waiting) else []


def _reached(value: int | None, seq: int) -> bool:
    return value is not None and value >= seq


def _maybe_still_running(
    present: Mapping[int, RankInGroup],
    ranks: list[int],
    stuck: int,
    captures: Mapping[int, Capture],
) -> bool:
    """True unless some dump was captured at least half a timeout after the collective began."""
    for rank in ranks:
        captured = captures[rank].captured_at
        for entry in present[rank].by_seq.get(stuck, [])[:1]:
            if captured is None or entry.created_ns is None or entry.timeout_ms is None:
                continue
            if captured * NS_PER_S - entry.created_ns >= entry.timeout_ms * 500_000:
                return False
    return True


def _capture_caveats(
    ranks: list[int],
    present: Mapping[int, RankInGroup],
    stuck_entries: list[Collective],
    captures: Mapping[int, Capture],
) -> list[str]:
    unknown = [r for r in ranks if captures[r].captured_at is None]
    if not unknown:
        return []
    return [
        f"when the dump of {_who(unknown)} was taken is unknown: a dump taken before the hang "
        "began would look the same (pass capture times to rule that out)"
    ]


# --- stopped reporting --------------------------------------------------------------------------


def _stopped_reporting(verdicts: list[GroupVerdict], silent: Mapping[int, str]) -> list[Candidate]:
    if not silent:
        return []
    ranks = sorted(silent)
    involved = [v for v in verdicts if set(v.group.members) & set(ranks) and v.group.present]
    if not involved:
        return []
    # The group where the silent ranks matter: a stuck one first, then the earliest onset.
    involved.sort(key=lambda v: (v.stuck_seq is None, v.onset_ns or 0))
    verdict = involved[0]
    group = verdict.group
    present = {r: p for r, p in group.present.items() if r not in silent}
    other_explanation = any(v.explained for v in verdicts)
    if other_explanation:
        confidence = STOPPED_WITH_OTHER_EXPLANATION
    elif verdict.stuck_seq is not None:
        confidence = STOPPED_ONLY_EXPLANATION
    else:
        confidence = STOPPED_PEERS_QUIET
    seq = verdict.stuck_seq
    if seq is None:
        seq = max((p.last_enqueued for p in present.values() if p.last_enqueued), default=None)
    peers = sorted(present)
    reasons = sorted(set(silent.values()))
    evidence = [
        DumpEvidence(
            ranks=ranks,
            sources=[],
            text="; ".join(
                f"{_who([r for r in ranks if silent[r] == why])}: {why}" for why in reasons
            ),
            process_group=group.name,
        ),
    ]
    if seq is not None and peers:
        evidence.append(
            _evidence(
                present,
                peers,
                group,
                seq,
                f"{_s(peers, 'was', 'were')} last in seq {seq}",
                require_seq=False,
            )
        )
    caveats = []
    if other_explanation:
        caveats.append(
            "the dumps show another explanation; a rank that crashed on a mismatched collective "
            "(gloo::EnforceNotMet) is a victim, not the cause"
        )
    return [
        Candidate(
            kind=CulpritKind.stopped_reporting,
            ranks=ranks,
            process_group=group.name,
            process_group_desc=group.desc or None,
            seq=seq,
            since=_when(verdict.onset_ns),
            confidence=confidence,
            summary=(
                f"{_who(ranks)} left no usable dump while {_who(peers)} of group "
                f"{_group_label(group)} {_s(peers, 'was', 'were')} last in seq {seq}: the process "
                "died, was stopped, or lost its host"
            ),
            evidence=evidence,
            caveats=caveats,
        )
    ]


# --- evidence -----------------------------------------------------------------------------------


def _evidence(
    present: Mapping[int, RankInGroup],
    ranks: list[int],
    group: Group,
    seq: int,
    what: str,
    *,
    require_seq: bool = True,
) -> DumpEvidence:
    sources = [present[r].capture.dump.source for r in ranks if r in present]
    entry = next(
        (present[r].by_seq[seq][0] for r in ranks if r in present and seq in present[r].by_seq),
        None,
    )
    return DumpEvidence(
        ranks=ranks,
        sources=sources[:MAX_SOURCES],
        more_sources=max(0, len(sources) - MAX_SOURCES),
        text=f"{_who(ranks)} {what}",
        process_group=group.name,
        seq=seq if entry is not None or not require_seq else None,
        op=entry.op if entry else None,
        call_site=entry.call_site if entry else None,
        time=_when(entry.created_ns) if entry else None,
    )


def _last_seen(present: Mapping[int, RankInGroup], ranks: list[int], group: Group) -> DumpEvidence:
    """Where ranks that never entered the stuck collective were last seen in this group."""
    lasts = {r: present[r].entries[-1] if present[r].entries else None for r in ranks}
    enqueued = sorted({present[r].last_enqueued for r in ranks}, key=_none_first)
    newest = max((e for e in lasts.values() if e), key=lambda e: e.record_id, default=None)
    sources = [present[r].capture.dump.source for r in ranks]
    return DumpEvidence(
        ranks=ranks,
        sources=sources[:MAX_SOURCES],
        more_sources=max(0, len(sources) - MAX_SOURCES),
        text=(
            f"{_who(ranks)} last enqueued seq {_seqs(enqueued)} in group {group.name}, completed "
            f"{_seqs(sorted({present[r].last_completed for r in ranks}, key=_none_first))}; "
            "no entry for any later collective of this group"
        ),
        process_group=group.name,
        seq=newest.seq if newest else None,
        op=newest.op if newest else None,
        call_site=newest.call_site if newest else None,
        time=_when(newest.created_ns) if newest else None,
    )


def _created(present: Mapping[int, RankInGroup], ranks: Iterable[int], seq: int) -> int | None:
    times = [
        e.created_ns
        for r in ranks
        for e in present[r].by_seq.get(seq, [])[:1]
        if e.created_ns is not None
    ]
    return min(times, default=None)


def _frontier_time(present: Mapping[int, RankInGroup]) -> int | None:
    times = [p.entries[-1].created_ns for p in present.values() if p.entries]
    known = [t for t in times if t is not None]
    return max(known, default=None)


def _when(ns: int | None) -> datetime | None:
    return datetime.fromtimestamp(ns / NS_PER_S, UTC) if ns else None


def _none_first(value: int | None) -> int:
    return -1 if value is None else value


def _seqs(values: list[int | None]) -> str:
    shown = ["none" if v is None else str(v) for v in values]
    return shown[0] if len(shown) == 1 else "/".join(shown)


def _group_label(group: Group) -> str:
    return f"{group.name} ({group.desc})" if group.desc else group.name


def _s(ranks: list[int], one: str, several: str) -> str:
    return one if len(ranks) == 1 else several


def _has(ranks: list[int]) -> str:
    return _s(ranks, "has", "have")


def _who(ranks: list[int]) -> str:
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {ranks_text(ranks)}"


def ranks_text(ranks: Iterable[int]) -> str:
    """`[0, 1, 2, 3, 7, 8]` -> `0-3, 7, 8`: runs of three or more become ranges."""
    runs: list[list[int]] = []
    for rank in sorted(set(ranks)):
        if runs and rank == runs[-1][-1] + 1:
            runs[-1].append(rank)
        else:
            runs.append([rank])
    parts: list[str] = []
    for run in runs:
        parts += [f"{run[0]}-{run[-1]}"] if len(run) >= 3 else [str(r) for r in run]
    return ", ".join(parts)
