"""The originating rank when no root-cause line names it: general inferences across ranks.

Consumes the time-ordered matches and the ranks a hypothesis points at; produces a `Finding`:
one rank with the mechanism and evidence behind it, or the ranks that remain possible and why.
Every mechanism compares what several ranks printed; none reads the wording of one log:

- **stated**: a line, its prefix or its file names the rank (`basis` says which);
- **pid_join**: a launcher, kernel or scheduler line names a pid or a local rank, and another
  line ties that pid (or local rank on that host) to a global rank;
- **odd_one_out**: ranks reporting the same symptom agree on the collective (op, size, dtype,
  the library call their traceback ends in) except one;
- **absent_from_symptoms**: every rank of the job but one reports the symptom, against the
  world size the evidence states (or, thinner, the ranks seen);
- **first_divergence**: of the ranks that may be behind, one stopped reporting progress
  (steps, iterations) before the others;
- **launcher_report**: an error names no rank, and a launcher reports exactly one rank
  exiting with an error code of its own (the others stopped by its signal);
- **single_process**: the evidence states a world size of 1: the one process is rank 0;
- **silent_end**: of those ranks, one's output ends well before its peers report the failure;
- **died_before_reports**: of those ranks, one is recorded dead (a non-zero exit code or a
  signal) before its peers report the failure.

Precision comes first: a mechanism names a rank only when the evidence leaves exactly one; when
it leaves several, they are returned as candidates with the reason, never a guess. A finding
resting on thin evidence (the world size unknown, a single rank's output) says so (`thin`), and
the confidence drops with it.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from denpex.events import Match
from denpex.ingest.attribution import attribution_from_path, split_prefixes
from denpex.ingest.numbers import identifier
from denpex.models import RankBasis
from denpex.taxonomy import Relay
from denpex.timeline.identity import world_size_from_ranks

WORLD_SIZE_CAPTURE = "world_size"
MAX_WORLD_SIZE = 1 << 20
SILENT_LEAD_S = 5.0
"""A rank's output ends this long before its peers report the failure: it went silent first."""
_FINGERPRINT = ("op", "numel_in", "numel_out", "dtype", "size", "count", "process_group")
_C10D_CALL = re.compile(r"distributed(?:_c10d)?\.py\", line \d+, in (?P<call>\w+)")


@dataclass(frozen=True)
class Finding:
    rank: int | None
    mechanism: str
    basis: RankBasis | None = None
    evidence: str = ""
    caveat: str = ""
    candidates: tuple[int, ...] = ()
    reason: str = ""
    thin: bool = False


def _ranks(ranks: Iterable[int]) -> str:
    return ", ".join(str(r) for r in sorted(ranks)) or "none"


# --- what the evidence states ------------------------------------------------------------------


def basis_of(match: Match) -> RankBasis | None:
    """How the line states the rank it is attributed to."""
    rank = match.event.rank
    if rank is None:
        return None
    if match.captures.get("rank") == str(rank):
        return RankBasis.line
    if split_prefixes(match.event.text).who.rank == rank:
        return RankBasis.prefix
    path = attribution_from_path(match.event.source.rsplit("!", 1)[-1])
    local = match.event.who.local_rank
    if path.rank == rank or (path.local_rank is not None and path.local_rank == local):
        return RankBasis.file_name
    # Neither the line nor its file states it: the timeline joined the line's pid or local rank
    # to the rank another line gave it (`timeline/identity.py`).
    return RankBasis.launcher


def stated_world_size(matches: Sequence[Match]) -> int | None:
    """The job's size as the evidence states it, when what it states is consistent: the largest
    size stated, and only if no rank seen lies outside it (a sub-group's size is not the job's)."""
    sizes = (identifier(m.captures.get(WORLD_SIZE_CAPTURE)) for m in matches)
    stated = [s for s in sizes if s is not None and 1 < s <= MAX_WORLD_SIZE]
    if not stated:
        return None
    size = max(stated)
    seen = ranks_in(matches)
    return size if not seen or max(seen) < size else None


def single_process(matches: Sequence[Match]) -> Finding | None:
    """Rank 0, when the evidence states a world size of 1 and names no other rank: a job of one
    process failed in that process."""
    sizes = {identifier(m.captures.get(WORLD_SIZE_CAPTURE)) for m in matches}
    sizes.discard(None)
    if sizes != {1} or ranks_in(matches) - {0}:
        return None
    stated = next(m for m in matches if identifier(m.captures.get(WORLD_SIZE_CAPTURE)) == 1)
    return Finding(
        0,
        "single_process",
        RankBasis.inferred,
        f"the job has one process (world size 1, stated at {stated.event.source}:"
        f"{stated.event.line})",
        "",
    )


def ranks_in(matches: Iterable[Match]) -> set[int]:
    return {m.event.rank for m in matches if m.event.rank is not None}


# --- joins --------------------------------------------------------------------------------------


def pid_join(anchors: Sequence[Match], matches: Sequence[Match]) -> Finding | None:
    """The rank of a pid or local rank that launcher, kernel or scheduler lines name: from
    another line that states both that pid (or that local rank on that host) and a rank."""
    for anchor in anchors:
        pid = _pid(anchor)
        if pid is not None:
            ranks = {
                m.event.rank
                for m in matches
                if m.event.rank is not None
                and _pid(m) == pid
                and _same_host(m, anchor)
                and m is not anchor
            }
            if len(ranks) == 1:
                rank = ranks.pop()
                return Finding(
                    rank,
                    "pid_join",
                    RankBasis.launcher,
                    f"{anchor.signature_id} names pid {pid}, which other lines tie to rank {rank}",
                    "the pid is assumed not reused between the lines joined",
                )
        local = anchor.event.who.local_rank
        if local is not None and anchor.event.rank is None:
            bases = {
                m.event.rank - m.event.who.local_rank
                for m in matches
                if m.event.rank is not None
                and m.event.who.local_rank is not None
                and _same_host(m, anchor)
            }
            if len(bases) == 1:
                rank = bases.pop() + local
                return Finding(
                    rank,
                    "pid_join",
                    RankBasis.launcher,
                    f"{anchor.signature_id} names local rank {local}; lines of the same host "
                    f"state its ranks as local rank + {rank - local}",
                    "assumes one process per local rank on that host",
                )
    return None


def _pid(match: Match) -> int | None:
    stated = identifier(match.captures.get("pid"))
    return stated if stated is not None else match.event.who.pid


def _same_host(a: Match, b: Match) -> bool:
    return a.event.host is None or b.event.host is None or a.event.host == b.event.host


EXIT_CODE_CAPTURE = "exitcode"
_MAX_EXIT_CODE = 255


def failed_on_its_own(matches: Sequence[Match]) -> Finding | None:
    """The one rank a launcher reports exiting with an error code of its own (exit status 1-255,
    not a signal), when it reports no other rank so: where an error that names no rank was most
    likely printed. Ranks a launcher stops after the first failure exit by its signal (negative
    codes), so they do not count against it."""
    failed: dict[int, Match] = {}
    for match in matches:
        code = identifier(match.captures.get(EXIT_CODE_CAPTURE))
        if match.event.rank is None or code is None or not 0 < code <= _MAX_EXIT_CODE:
            continue
        failed.setdefault(match.event.rank, match)
    if len(failed) != 1:
        return None
    rank, report = next(iter(failed.items()))
    return Finding(
        rank,
        "launcher_report",
        RankBasis.launcher,
        f"{report.signature_id} reports rank {rank} alone exiting with an error of its own",
        "the error line itself names no rank: it is taken to be the failed worker's",
        thin=True,
    )


# --- across ranks -------------------------------------------------------------------------------


def call_site(match: Match) -> str | None:
    """The torch.distributed call a traceback ends in (all_reduce, broadcast, ...)."""
    calls = [found["call"] for line in match.event.context if (found := _C10D_CALL.search(line))]
    calls = [c for c in calls if c != "wrapper"]
    return calls[-1] if calls else None


def odd_one_out(symptoms: Sequence[Match]) -> Finding | None:
    """One rank whose collective differs from what every other reporting rank agrees on."""
    features: dict[str, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    for match in symptoms:
        rank = match.event.rank
        if rank is None:
            continue
        for name in _FINGERPRINT:
            if (value := match.captures.get(name)) is not None:
                features[name][rank].add(value)
        if (call := call_site(match)) is not None:
            features["call"][rank].add(call)
    odd: dict[int, list[str]] = defaultdict(list)
    for name, by_rank in features.items():
        single = {rank: next(iter(v)) for rank, v in by_rank.items() if len(v) == 1}
        if len(single) < 3:
            continue
        counts = Counter(single.values())
        if len(counts) != 2:
            continue
        (common, n_common), (rare, n_rare) = counts.most_common(2)
        if n_rare != 1 or n_common < 2:
            continue
        rank = next(r for r, v in single.items() if v == rare)
        others = _ranks(single.keys() - {rank})
        odd[rank].append(f"{name} {rare} where ranks {others} have {common}")
    if len(odd) != 1:
        return None
    rank, differences = next(iter(odd.items()))
    return Finding(
        rank,
        "odd_one_out",
        RankBasis.inferred,
        f"of the ranks reporting the failure, rank {rank} alone differs: " + "; ".join(differences),
        "the rank whose call differs is where the programs diverged; which side holds the bug "
        "is for the code to say",
    )


def split_calls(symptoms: Sequence[Match]) -> Finding | None:
    """Ranks stuck at the same collective sequence number in different calls (another op, size
    or dtype) with no lone odd one: the ranks issued different collectives, and which side
    diverged is not in evidence."""
    at_seq: dict[str, dict[int, dict[str, str]]] = defaultdict(dict)
    for match in symptoms:
        seq, rank = match.captures.get("seq"), match.event.rank
        if seq is None or rank is None:
            continue
        # A rooted collective (gather, scatter) legitimately sizes its output by rank.
        fingerprint = {
            n: v
            for n in _FINGERPRINT
            if n != "numel_out" and (v := match.captures.get(n)) is not None
        }
        at_seq[seq].setdefault(rank, fingerprint)
    for seq, by_rank in at_seq.items():
        if len(by_rank) < 2:
            continue
        shared = set.intersection(*(set(f) for f in by_rank.values()))
        differing = [n for n in sorted(shared) if len({f[n] for f in by_rank.values()}) > 1]
        if not differing:
            continue
        sides = "; ".join(
            f"rank {rank}: " + ", ".join(f"{n} {by_rank[rank][n]}" for n in differing)
            for rank in sorted(by_rank)
        )
        return Finding(
            None,
            "undetermined",
            candidates=tuple(sorted(by_rank)),
            reason=f"at SeqNum {seq} the ranks wait in different collectives ({sides}): they "
            "issued different calls, and no lone rank differs from the others",
        )
    return None


def crossed_sequences(symptoms: Sequence[Match]) -> Finding | None:
    """Two or more ranks of one group stuck at different sequence numbers in different calls,
    with no majority to be behind.

    A watchdog reports a rank's oldest unfinished collective, so a rank stuck at SeqNum 126 has
    finished 122-125, the very collectives a peer stuck at 122 never finished. Over one group
    that cannot happen while both sides issue the same calls in the same order: the ranks paired
    different collectives (an all-gather met a reduce-scatter). Which side diverged is for the
    code to say, so no rank is named.
    """
    stuck: dict[int, tuple[int, str, str | None]] = {}
    for match in symptoms:
        rank, seq = match.event.rank, identifier(match.captures.get("seq"))
        op = match.captures.get("op")
        if rank is None or seq is None or seq < 0 or op is None:
            continue
        if rank not in stuck or seq < stuck[rank][0]:
            stuck[rank] = (seq, op, match.captures.get("process_group"))
    if len(stuck) < 2 or len({group for _, _, group in stuck.values()}) != 1:
        return None
    by_seq = Counter(seq for seq, _, _ in stuck.values())
    if len(by_seq) < 2 or len({op for _, op, _ in stuck.values()}) < 2:
        return None
    (_, first), (_, second) = by_seq.most_common(2)
    if first > second:
        return None  # a majority at one number: the others are behind or ahead of it
    sides = "; ".join(
        f"rank {rank} at SeqNum {seq} in {op}" for rank, (seq, op, _) in sorted(stuck.items())
    )
    return Finding(
        None,
        "undetermined",
        candidates=tuple(sorted(stuck)),
        reason=f"the ranks wait at different collectives of one group ({sides}): a rank further "
        "on has finished the collective its peer still waits in, so the ranks paired different "
        "calls",
    )


def last_steps(matches: Sequence[Match]) -> dict[int, int]:
    steps: dict[int, int] = {}
    for match in matches:
        step, rank = identifier(match.captures.get("step")), match.event.rank
        if rank is None or step is None or step < 0 or match.signature.role != "context":
            continue
        steps[rank] = max(step, steps.get(rank, -1))
    return steps


def first_divergence(candidates: Sequence[int], matches: Sequence[Match]) -> Finding | None:
    """Of several candidates, the one whose progress stopped before every other rank's."""
    steps = last_steps(matches)
    if len(steps) < 3 or not set(candidates) <= set(steps):
        return None
    lowest = min(steps[c] for c in candidates)
    behind = [c for c in candidates if steps[c] == lowest]
    others = [s for r, s in steps.items() if r not in behind]
    if len(behind) != 1 or not others or min(others) <= lowest:
        return None
    rank = behind[0]
    return Finding(
        rank,
        "first_divergence",
        RankBasis.inferred,
        f"rank {rank}'s last reported step is {lowest}; every other rank reported step "
        f"{min(others)} or later",
        "a rank that stops printing progress may still be alive (stopped, hung or slow)",
    )


def silent_end(
    candidates: Sequence[int], reporters: Sequence[Match], matches: Sequence[Match]
) -> Finding | None:
    """Of several candidates, the one whose output ended well before its peers reported."""
    first_report = min((m.event.time for m in reporters if m.event.time is not None), default=None)
    if first_report is None:
        return None
    last: dict[int, float] = {}
    for match in matches:
        if match.event.rank in candidates and match.event.time is not None:
            last[match.event.rank] = max(match.event.time, last.get(match.event.rank, 0.0))  # type: ignore[index]
    silent = [r for r in candidates if r in last and last[r] < first_report - SILENT_LEAD_S]
    talking = [r for r in candidates if r not in silent]
    if len(silent) != 1 or not all(r in last for r in talking):
        return None
    rank = silent[0]
    return Finding(
        rank,
        "silent_end",
        RankBasis.inferred,
        f"rank {rank}'s output ends {first_report - last[rank]:.0f} s before its peers "
        "reported the failure",
        "a log that ends may have been cut by the collector rather than by the process",
    )


def died_before_reports(
    candidates: Sequence[int], reporters: Sequence[Match], matches: Sequence[Match]
) -> Finding | None:
    """Of several candidates, the one whose process is recorded dead (a launcher's exit record
    with a non-zero exit code or a signal) before its peers reported the failure. A rank killed
    in the cascade dies after the reports; one that died first left its peers waiting. Unlike
    `silent_end`, the other candidates need no lines: a death is evidence, silence is not."""
    first_report = min((m.event.time for m in reporters if m.event.time is not None), default=None)
    if first_report is None:
        return None
    died: dict[int, tuple[float, str]] = {}
    for match in matches:
        rank, when = match.event.rank, match.event.time
        if rank not in candidates or when is None or when >= first_report - SILENT_LEAD_S:
            continue
        how = _death(match)
        if how is not None and (rank not in died or when < died[rank][0]):
            died[rank] = (when, how)
    if len(died) != 1:
        return None
    ((rank, (when, how)),) = died.items()
    return Finding(
        rank,
        "died_before_reports",
        RankBasis.inferred,
        f"rank {rank}'s process {how} {first_report - when:.0f} s before its peers reported the "
        "failure",
        "the record says the process ended first, not why: its own output before it ended "
        "holds the cause",
    )


def _death(match: Match) -> str | None:
    """How a record says its process ended abnormally: 'exited with code N' or 'died of signal
    S', from the exit code or signal it captures; None for anything else."""
    code = identifier(match.captures.get("exitcode"))
    signal = match.captures.get("signal")
    if signal:
        return f"died of {signal}"
    if code is not None and code != 0:
        return f"exited with code {code}"
    return None


def absent_from_symptoms(
    reporters: set[int], matches: Sequence[Match], relay: Relay | None
) -> Finding:
    """The ranks of the job that did not report a symptom every other rank reports."""
    if not reporters:
        return Finding(None, "undetermined", reason="no line says which rank reported the symptom")
    world = stated_world_size(matches)
    seen = ranks_in(matches)
    job = set(range(world)) if world is not None else seen
    missing = sorted(job - reporters)
    what = "lost a peer" if relay is Relay.peer else "timed out waiting"
    known = f"world size {world}, stated in the logs" if world else "the ranks seen in the logs"
    # Ranks count from 0, so rank k in evidence means ranks 0..k exist even when they printed
    # nothing. Such a rank is possible, never named: an excerpt that stops early leaves out
    # ranks that did reach the collective just as often as one that never did.
    implied = world_size_from_ranks(seen) if world is None else None
    unseen = sorted(set(range(implied)) - seen) if implied is not None else []
    if len(missing) == 1 and reporters and not unseen:
        rank = missing[0]
        thin = world is None
        return Finding(
            rank,
            "absent_from_symptoms",
            RankBasis.inferred,
            f"ranks {_ranks(reporters)} {what}; rank {rank} is the one rank of the job "
            f"({known}) that did not",
            "the job's size is not stated; a rank that printed nothing at all would be missed"
            if thin
            else "a rank that reported nothing may also have had its output lost",
            thin=thin,
        )
    if unseen and reporters:
        return Finding(
            None,
            "undetermined",
            candidates=tuple(sorted({*missing, *unseen})),
            reason=f"ranks {_ranks(reporters)} {what}; rank(s) {_ranks(unseen)} exist (ranks "
            f"count from 0 and rank {max(seen)} is in evidence) but left no line, so whether "
            "they reached the same point is not in evidence",
            thin=True,
        )
    reason = (
        f"ranks {_ranks(reporters)} {what}; of the job ({known}), ranks {_ranks(missing)} did "
        "not, and nothing tells them apart"
        if missing
        else f"every rank in evidence ({known}) reported the same symptom"
        + ("" if world else "; the job's size is not stated, so the rank behind it may be missing")
    )
    return Finding(
        None, "undetermined", candidates=tuple(missing), reason=reason, thin=world is None
    )


def narrow(finding: Finding, reporters: Sequence[Match], matches: Sequence[Match]) -> Finding:
    """Several candidates: the one whose progress or output stopped first, if one did."""
    if finding.rank is not None or len(finding.candidates) < 2:
        return finding
    narrowed = (
        first_divergence(finding.candidates, matches)
        or silent_end(finding.candidates, reporters, matches)
        or died_before_reports(finding.candidates, reporters, matches)
    )
    if narrowed is None:
        return finding
    return Finding(
        narrowed.rank,
        narrowed.mechanism,
        narrowed.basis,
        f"{finding.reason}; {narrowed.evidence}",
        narrowed.caveat,
        thin=finding.thin,
    )
