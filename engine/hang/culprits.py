"""From group progress to candidate explanations of a hang: who the others wait for, and why.

Consumes the groups `progress` built (members, each present member's sequence progress) and the
ranks whose dump is missing or older than the hang; produces ranked `Candidate`s (before
hardware correlation) and, per group, the first sequence id some member did not finish.

Per group, the *stuck* collective is the lowest sequence id that some member has not completed
although a member has enqueued it. Then:
- members that never enqueued it are `never_entered`, unless they are blocked inside an
  unfinished collective of another group, which makes them `stalled` there (a consequence);
- members that called a different op, sizes or dtypes at a sequence id the dumps share are
  `mismatched` (see `mismatch.py`);
- members with no dump, or a dump taken before the hang, are `stopped_reporting`;
- when none of these explains it, members that did not finish what others finished, or, failing
  that, everyone still inside it, are `stalled`.
Confidences are priors per situation (the constants below and in `mismatch.py`), not yet
calibrated on enough cases.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from denpex.hang.dumps import Collective
from denpex.hang.evidence import (
    created,
    describe,
    evidence,
    frontier_time,
    group_label,
    has,
    last_seen,
    plural,
    ranks_text,
    when,
    who,
)
from denpex.hang.mismatch import first_mismatch, mismatch_candidates
from denpex.hang.models import Candidate, CulpritKind, DumpEvidence
from denpex.hang.progress import NS_PER_S, Capture, Group, RankInGroup

# Priors, per situation. Each is P(the named ranks are where the hang began | this pattern).
NEVER_ENTERED_CLEAR = 0.85
NEVER_ENTERED_WITH_GAPS = 0.6  # some members have no dump: they may be the real cause
NEVER_ENTERED_AFTER_MISMATCH = 0.5
STOPPED_ONLY_EXPLANATION = 0.8  # everyone with a dump waits; only the silent ranks can be it
STOPPED_PEERS_QUIET = 0.6  # peers finished (or failed out of) everything they entered
STOPPED_WITH_OTHER_EXPLANATION = 0.3
STALLED_BEHIND_PEERS = 0.6
STALLED_BLOCKED_ELSEWHERE = 0.35
MUTUAL_WAIT = 0.4  # two groups wait on each other: either side may have skipped a collective
STALLED_NOT_STARTED = 0.5
STALLED_EVERYONE = 0.25
STALLED_EVERYONE_MAYBE_RUNNING = 0.15


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
    mismatch = first_mismatch(group, present)
    if mismatch is not None:
        candidates += mismatch_candidates(group, present, *mismatch)
    stuck = _stuck_seq(present)
    if stuck is None:
        onset = frontier_time(present)
        return GroupVerdict(group, None, onset, candidates, bool(candidates))
    entered = {r: p for r, p in present.items() if _reached(p.last_enqueued, stuck)}
    absent = sorted(set(present) - set(entered))
    waiting = sorted(r for r, p in entered.items() if not _reached(p.last_completed, stuck))
    onset = created(entered, waiting or sorted(entered), stuck)
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
    op = describe(stuck_entries) if stuck_entries else None
    waiting_evidence = evidence(
        present,
        waiting,
        group,
        stuck,
        f"entered seq {stuck} ({op}) and {has(waiting)} not completed it",
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
                f"{group_label(blocked[r][0])}, which {who(owed[r])} never entered"
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
                since=when(created(present, waiting, stuck)),
                confidence=confidence,
                summary=(
                    f"{who(ranks)} never called seq {stuck} of group {group_label(group)}"
                    f"{f' ({op})' if op else ''}, which {who(waiting)} "
                    f"{plural(waiting, 'waits', 'wait')} in"
                ),
                evidence=[last_seen(present, ranks, group), waiting_evidence],
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
                op=describe([entry]),
                since=when(entry.created_ns),
                confidence=STALLED_BLOCKED_ELSEWHERE,
                summary=(
                    f"rank {rank} is blocked in seq {entry.seq} of group {group_label(other)} "
                    f"and so never reached seq {stuck} of group {group_label(group)}, which "
                    f"{who(waiting)} {plural(waiting, 'waits', 'wait')} in; the cause is in group "
                    f"{other.name}"
                ),
                evidence=[
                    evidence(
                        other.present,
                        [rank],
                        other,
                        entry.seq,
                        f"entered seq {entry.seq} ({describe([entry])}) and has not completed it",
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
    label = f"seq {stuck} of group {group_label(group)}" + (
        f" ({describe(entries)})" if entries else ""
    )
    proven = _finished_for_sure(entered, waiting, stuck)
    not_started = _not_started(present, waiting, stuck)
    caveats = []
    if proven:
        ranks, confidence = waiting, STALLED_BEHIND_PEERS
        summary = (
            f"{who(waiting)} did not finish {label}, which {who(proven)} finished and moved past"
        )
    elif not_started:
        ranks, confidence = not_started, STALLED_NOT_STARTED
        summary = f"{who(not_started)} never started {label} on the device; the others did"
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
    shown = [evidence(present, waiting, group, stuck, f"{has(waiting)} not completed seq {stuck}")]
    if proven:
        shown.append(evidence(present, proven, group, stuck, f"completed seq {stuck}"))
    return [
        Candidate(
            kind=CulpritKind.stalled,
            ranks=ranks,
            process_group=group.name,
            process_group_desc=group.desc or None,
            seq=stuck,
            op=describe(entries) if entries else None,
            since=when(created(present, waiting, stuck)),
            confidence=confidence,
            summary=summary,
            evidence=shown,
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
        f"when the dump of {who(unknown)} was taken is unknown: a dump taken before the hang "
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
    shown = [
        DumpEvidence(
            ranks=ranks,
            sources=[],
            text="; ".join(
                f"{who([r for r in ranks if silent[r] == why])}: {why}" for why in reasons
            ),
            process_group=group.name,
        ),
    ]
    if seq is not None and peers:
        shown.append(
            evidence(
                present,
                peers,
                group,
                seq,
                f"{plural(peers, 'was', 'were')} last in seq {seq}",
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
            since=when(verdict.onset_ns),
            confidence=confidence,
            summary=(
                f"{who(ranks)} left no usable dump while {who(peers)} of group "
                f"{group_label(group)} {plural(peers, 'was', 'were')} last in seq {seq}: the "
                "process died, was stopped, or lost its host"
            ),
            evidence=shown,
            caveats=caveats,
        )
    ]
