"""Hypotheses: each root cause in evidence, with what it explains, ranked.

Consumes the time-ordered matches; produces ranked `Hypothesis` objects. Root causes compete;
symptoms, and root causes that are known consequences of another, attach to what explains them
instead of becoming roots of their own. The ranking follows what a careful investigator does:

1. A root cause that a failure of another class can bring about, on the same process, rank or
   host, is that failure's consequence (`consequences` in taxonomy.yaml): the OOM kill explains
   the SIGKILLed rank; the GPU that fell off the bus explains its host's CUDA errors. Scheduler
   actions act on the whole job, so their consequences may be on any host.
2. Scheduler actions (preemption, time limit, node failure, cancellation, eviction) outrank every
   root cause that appears after them, give or take `SCHEDULER_LEAD_S`: they cause the pile.
3. Otherwise the earliest root cause wins; root causes within `TIE_WINDOW_S` of each other
   compete on confidence, so a specific record beats a generic exception printed alongside it.
4. A root cause that appears only well after the symptoms cannot have caused them (a hung rank
   is SIGKILLed by its launcher half a minute after its peers time out); the culprit the
   symptoms point at then ranks first.
5. A root cause resting only on tentative signatures (generated from an emitter's source with
   an unclear class) ranks below every other root cause, however early it came.
"""

from __future__ import annotations

from collections.abc import Sequence

from denpex.events import Attribution, Match
from denpex.models import RankBasis
from denpex.reason.after_the_loop import mismatched_after_the_loop
from denpex.reason.agreement import disagreements
from denpex.reason.confidence import assign_confidence, culprit_confidence
from denpex.reason.culprit import Culprit, infer_culprit, ranks_seen
from denpex.reason.hypothesis import Hypothesis, JobShape
from denpex.reason.origin import (
    Finding,
    absent_from_symptoms,
    basis_of,
    call_site,
    failed_on_its_own,
    narrow,
    pid_join,
    ranks_in,
    single_process,
)
from denpex.reason.readings import with_open_readings
from denpex.signatures.signature import Role
from denpex.taxonomy import Relay, can_cause

SCHEDULER_LEAD_S = 60.0
TIE_WINDOW_S = 2.0
CASCADE_LEAD_S = 10.0
CONSEQUENCE_LEAD_S = 5.0
DUMP_AND_SYMPTOMS_AGREE = 0.3


def _origin(match: Match) -> Attribution | None:
    return match.event.who if match.signature.traits.locates_origin else None


def _origin_of(roots: Sequence[Match]) -> Attribution | None:
    """Who the first record is about; when it names no rank, the one rank that other records of
    the same failure in the same input name (an exception line, then c10d's `[Rank 1]` report
    of the same error), if they agree."""
    origin = _origin(roots[0])
    if origin is None or origin.rank is not None:
        return origin
    source = roots[0].event.source
    named = {
        m.event.rank
        for m in roots
        if m.event.source == source and m.event.rank is not None and _origin(m) is not None
    }
    if len(named) != 1:
        return origin
    return Attribution(named.pop(), origin.local_rank, origin.host, origin.pid)


def _hypothesis(group: list[Match]) -> Hypothesis:
    first = group[0]
    return Hypothesis(
        failure_class=first.signature.failure_class,
        signature=first.signature,
        roots=group,
        prior=max(m.signature.confidence for m in group),
        originating=_origin_of(group),
        first_seen=first.event.time,
    )


def _by_class(roots: Sequence[Match]) -> list[Hypothesis]:
    groups: dict[str, list[Match]] = {}
    for match in roots:
        groups.setdefault(match.signature.failure_class, []).append(match)
    return [_hypothesis(group) for group in groups.values()]


def related(a: Match, b: Match, job: JobShape) -> bool:
    """Whether two events concern the same process, host or rank, as far as they say."""
    left, right = a.event.who, b.event.who
    if left.pid is not None and right.pid is not None and left.host == right.host:
        return left.pid == right.pid
    if left.host is not None and right.host is not None:
        return left.host == right.host
    if left.rank is not None and right.rank is not None:
        return left.rank == right.rank
    return job.single_host


def _precedes(cause: Match, effect: Match) -> bool:
    a, b = cause.event.time, effect.event.time
    return a is None or b is None or a <= b + CONSEQUENCE_LEAD_S


def _absorb_consequences(hypotheses: list[Hypothesis], job: JobShape) -> list[Hypothesis]:
    """Move each root match that another hypothesis explains into that hypothesis."""
    by_strength = sorted(hypotheses, key=lambda h: -h.prior)
    for effect in hypotheses:
        kept: list[Match] = []
        for match in effect.roots:
            cause = next(
                (
                    h
                    for h in by_strength
                    if h is not effect
                    and h.roots
                    and can_cause(h.failure_class, effect.failure_class)
                    and any(
                        (h.dominant or related(c, match, job)) and _precedes(c, match)
                        for c in h.roots
                    )
                ),
                None,
            )
            if cause is None:
                kept.append(match)
            else:
                cause.consequences.append(match)
        effect.roots = kept
    survivors = [h for h in hypotheses if h.roots]
    for hypothesis in survivors:
        first = hypothesis.roots[0]
        hypothesis.originating, hypothesis.first_seen = (
            _origin_of(hypothesis.roots),
            first.event.time,
        )
        hypothesis.signature = first.signature
    return survivors


def _rank(hypotheses: list[Hypothesis]) -> list[Hypothesis]:
    # Among findings at the same point (or untimed), a generic fallback (any uncaught
    # exception) yields to a specific one, whatever their priors.
    timed = sorted((h for h in hypotheses if h.first_seen is not None), key=_time)
    untimed = sorted((h for h in hypotheses if h.first_seen is None), key=_specific_first)
    ranked: list[Hypothesis] = []
    while timed:
        leader_time = _time(timed[0])
        ties = [h for h in timed if _time(h) - leader_time <= TIE_WINDOW_S]
        ranked.extend(sorted(ties, key=_specific_first))
        timed = [h for h in timed if h not in ties]
    ordered = [*ranked, *untimed]
    settled = [h for h in ordered if not _tentative(h)]
    return _promote_scheduler([*settled, *(h for h in ordered if h not in settled)])


def _tentative(hypothesis: Hypothesis) -> bool:
    return bool(hypothesis.roots) and all(m.signature.tentative for m in hypothesis.roots)


def _fallback(hypothesis: Hypothesis) -> bool:
    return bool(hypothesis.roots) and all(m.signature.fallback for m in hypothesis.roots)


def _specific_first(hypothesis: Hypothesis) -> tuple[bool, float]:
    return (_fallback(hypothesis), -hypothesis.prior)


def _time(hypothesis: Hypothesis) -> float:
    return hypothesis.first_seen if hypothesis.first_seen is not None else float("inf")


def _promote_scheduler(ranked: list[Hypothesis]) -> list[Hypothesis]:
    """Move the earliest scheduler action above every root cause it can have caused."""
    dominant = next((h for h in ranked if h.dominant), None)
    if dominant is None or ranked[0] is dominant:
        return ranked
    others = [h for h in ranked if h is not dominant]
    if dominant.first_seen is None:
        return [dominant, *others]
    ahead = [h for h in others if _time(h) < dominant.first_seen - SCHEDULER_LEAD_S]
    return [*ahead, dominant, *(h for h in others if h not in ahead)]


def _from_culprit(culprit: Culprit, matches: Sequence[Match]) -> Hypothesis:
    """A hypothesis built from symptoms alone; it names a rank only when one is determined."""
    originating = None
    named = culprit.finding.rank if culprit.finding is not None else None
    if named is None and culprit.finding is None and len(culprit.suspects) == 1:
        named = culprit.suspects[0]
    if named is not None:
        rank = named
        host = next((m.event.host for m in matches if m.event.rank == rank and m.event.host), None)
        originating = Attribution(rank=rank, host=host)
    times = [m.event.time for m in culprit.evidence if m.event.time is not None]
    return Hypothesis(
        failure_class=culprit.failure_class,
        signature=culprit.evidence[0].signature,
        roots=[],
        prior=culprit.evidence[0].signature.confidence,
        originating=originating,
        first_seen=min(times, default=None),
        culprit=culprit,
    )


def _symptoms_come_first(symptoms: list[Match], hypotheses: list[Hypothesis]) -> bool:
    """True when there is no root cause, or the first one comes well after the symptoms.

    Symptoms of the root cause's own class are its early signs (fp16 overflows halving the
    loss scale before DeepSpeed gives up at the minimum), not a cascade that began elsewhere."""
    if not hypotheses:
        return bool(symptoms)
    top = hypotheses[0]
    if top.dominant or top.first_seen is None:
        return False
    first_symptom = min(
        (m.event.time for m in symptoms if m.event.time is not None and not _early_sign_of(m, top)),
        default=None,
    )
    return first_symptom is not None and first_symptom < top.first_seen - CASCADE_LEAD_S


def _early_sign_of(symptom: Match, hypothesis: Hypothesis) -> bool:
    return symptom.signature.failure_class == hypothesis.failure_class


def _explainable(symptom: Match, hypothesis: Hypothesis) -> bool:
    if symptom.event.time is None or hypothesis.first_seen is None:
        return True
    if _early_sign_of(symptom, hypothesis):
        return True
    lead = SCHEDULER_LEAD_S if hypothesis.dominant else CASCADE_LEAD_S
    return symptom.event.time >= hypothesis.first_seen - lead


def form_hypotheses(
    matches: Sequence[Match],
    from_dumps: Sequence[Hypothesis] = (),
    input_ranks: frozenset[int] = frozenset(),
) -> list[Hypothesis]:
    """Ranked hypotheses over time-ordered matches, with those Flight Recorder dumps support;
    [] when nothing abnormal was found. `input_ranks`: the ranks whose own output is among the
    inputs (a file per rank), whether or not anything in it matched."""
    job = JobShape.of(matches)
    roots = [m for m in matches if m.role is Role.root_cause]
    symptoms = [m for m in matches if m.role is Role.symptom]
    # A disagreement's origin is the odd process out, not its first line's: it joins after.
    hypotheses = _rank(
        [
            *_absorb_consequences(_by_class(roots), job),
            *disagreements(matches),
            *mismatched_after_the_loop(matches),
        ]
    )
    culprit = infer_culprit(matches)
    if not hypotheses or _symptoms_come_first(symptoms, hypotheses):
        hypotheses = _lead_without_a_root(hypotheses, culprit, from_dumps, matches)
    else:
        hypotheses = _with_dumps_behind_a_root(hypotheses, from_dumps)
    if not hypotheses:
        return []
    top = hypotheses[0]
    _undetermined_if_everywhere_at_once(top)
    _undetermined_if_alone(top, matches, input_ranks)
    _undetermined_if_node_wide(top, matches)
    _undetermined_if_others_stopped_unseen(top, matches)
    _undetermined_if_unknown_and_raised_in_a_collective(top)
    _undetermined_if_unread(top)
    for hypothesis in hypotheses:
        hypothesis.finding = hypothesis.finding or _stated(hypothesis)
    if top.finding is None:
        top.finding = _inferred(top, symptoms, matches)
    top.explained = [m for m in symptoms if _explainable(m, top)]
    unexplained = [m for m in symptoms if not _explainable(m, top)]
    assign_confidence(hypotheses, unexplained)
    return with_open_readings(hypotheses)


def _leave_undetermined(
    hypothesis: Hypothesis, host: str | None, candidates: tuple[int, ...], reason: str
) -> None:
    """No rank named: the hypothesis keeps only the host (when one) and the ranks that remain
    possible, with the reason none is named."""
    hypothesis.originating = Attribution(host=host)
    hypothesis.finding = Finding(None, "undetermined", candidates=candidates, reason=reason)


def _undetermined_if_everywhere_at_once(hypothesis: Hypothesis) -> None:
    """Several ranks hitting the same root cause at once (a bug every rank executes, a fault
    they share) did not begin on any one of them: the rank is left undetermined."""
    if not hypothesis.roots or hypothesis.originating is None:
        return
    onset = hypothesis.first_seen
    at_onset = {
        m.event.rank
        for m in hypothesis.roots
        if m.event.rank is not None
        and (onset is None or m.event.time is None or m.event.time - onset <= TIE_WINDOW_S)
    }
    if len(at_onset) < 2:
        return
    hosts = {m.event.host for m in hypothesis.roots if m.event.rank in at_onset}
    host = hosts.pop() if len(hosts) == 1 else None
    listed = ", ".join(str(r) for r in sorted(at_onset))  # type: ignore[type-var]
    _leave_undetermined(
        hypothesis,
        host,
        tuple(sorted(r for r in at_onset if r is not None)),
        f"ranks {listed} met {hypothesis.failure_class} within {TIE_WINDOW_S:.0f} s of each "
        "other: a fault they share, or one the clocks cannot order",
    )


def _undetermined_if_alone(
    hypothesis: Hypothesis, matches: Sequence[Match], input_ranks: frozenset[int]
) -> None:
    """A fault every rank meets alike, stated by the one rank whose output is at hand, is not
    placed on that rank: the other ranks' output, which would show whether they met it too or
    were left waiting, is not in evidence.

    - A job-wide fault (a checkpoint that does not fit, a DDP misuse) names no rank when no
      other rank appears in the matches.
    - A fault in code, data or settings every rank runs the same way (a shape mismatch, a NaN
      from the model, a missing file) leaves the rank a candidate when no other rank appears
      in the matches or has a file among the inputs. A launcher's report that this worker
      failed first is evidence of order, and keeps the name.

    A job the evidence states has one process has no other rank to have met it: the name stays."""
    origin = hypothesis.originating
    if origin is None or origin.rank is None:
        return
    traits = hypothesis.traits
    if traits.job_wide:
        if ranks_seen(matches) != {origin.rank}:
            return
        candidates: tuple[int, ...] = ()
        reason = (
            f"{hypothesis.failure_class} is met by every rank alike and only one rank's "
            "output is in evidence"
        )
    elif traits.executed_alike:
        if ranks_seen(matches) | input_ranks != {origin.rank}:
            return
        line = next((m for m in hypothesis.roots if m.event.rank == origin.rank), None)
        if line is None or basis_of(line) is RankBasis.launcher:
            return
        candidates = (origin.rank,)
        reason = (
            f"{hypothesis.failure_class} lies in what every rank runs alike, and only rank "
            f"{origin.rank}'s output is in evidence: the others may have met it too"
        )
    else:
        return
    if single_process(matches) is not None:
        return  # read only here: it walks every match, and only a lone rank's fault needs it
    _leave_undetermined(hypothesis, origin.host, candidates, reason)


def _undetermined_if_node_wide(hypothesis: Hypothesis, matches: Sequence[Match]) -> None:
    """A resource every process on a host shares by construction (its /dev/shm) ran out: the rank
    whose line reports it first was only the first to ask for more, so the host is named, not
    that rank, and the ranks seen on the host remain the candidates."""
    origin = hypothesis.originating
    if origin is None or origin.rank is None or not hypothesis.traits.node_wide:
        return
    host = origin.host
    on_host = sorted(
        {
            m.event.rank
            for m in matches
            if m.event.rank is not None and (host is None or m.event.host in (host, None))
        }
        | {origin.rank}
    )
    where = f"host {host}" if host is not None else "its host"
    _leave_undetermined(
        hypothesis,
        host,
        tuple(on_host),
        f"{hypothesis.failure_class} is a resource every process on {where} shares; "
        f"rank {origin.rank} reported it first, which does not say it began there",
    )


def _undetermined_if_others_stopped_unseen(
    hypothesis: Hypothesis, matches: Sequence[Match]
) -> None:
    """A fault in code, data or settings that every rank runs alike, stated on one rank, while
    other ranks printed a traceback whose exception line is not in the input (an excerpt cut
    it, interleaved output lost it) at about the same time: nothing says those ranks did not
    meet the same fault at the same point, so the rank whose line survived is not named over
    them. A rank whose own lines say how it failed (a peer's lost connection, a timeout) is not
    counted: that is a cascade, not the same fault."""
    origin = hypothesis.originating
    if origin is None or origin.rank is None or not hypothesis.traits.executed_alike:
        return
    named = origin.rank
    onset = hypothesis.first_seen
    by_rank: dict[int, list[Match]] = {}
    for match in matches:
        rank = match.event.rank
        if rank is not None and rank != named:
            by_rank.setdefault(rank, []).append(match)
    unseen = sorted(
        rank
        for rank, own in by_rank.items()
        if all(m.role is Role.symptom and m.signature.fallback for m in own)
        and any(
            onset is None or m.event.time is None or abs(m.event.time - onset) <= CASCADE_LEAD_S
            for m in own
        )
    )
    if not unseen:
        return
    candidates = (named, *unseen)
    hosts = {
        m.event.host for m in matches if m.event.rank in candidates and m.event.host is not None
    }
    listed = ", ".join(str(r) for r in unseen)
    _leave_undetermined(
        hypothesis,
        hosts.pop() if len(hosts) == 1 else None,
        tuple(sorted(candidates)),
        f"rank(s) {listed} printed a traceback whose exception is not in the input, at about "
        f"the time rank {named} met {hypothesis.failure_class}, a fault in what every rank "
        "runs: they may have met it too",
    )


def _undetermined_if_unknown_and_raised_in_a_collective(hypothesis: Hypothesis) -> None:
    """An exception no specific signature knows, raised inside a torch.distributed collective:
    a collective fails on every rank that joined it, whichever rank broke it, so the rank whose
    traceback is in the input is a participant, not shown to be the origin."""
    origin = hypothesis.originating
    if origin is None or origin.rank is None or not hypothesis.roots:
        return
    if not all(m.signature.fallback or m.signature.tentative for m in hypothesis.roots):
        return
    own = [m for m in hypothesis.roots if m.event.rank == origin.rank]
    call = next((c for m in own if (c := call_site(m)) is not None), None)
    if call is None:
        return
    rank = origin.rank
    _leave_undetermined(
        hypothesis,
        origin.host,
        (rank,),
        f"rank {rank}'s exception, which no signature knows, was raised inside {call}: a "
        "collective fails on every rank that joined it, so it may have begun on a peer",
    )


def _undetermined_if_unread(hypothesis: Hypothesis) -> None:
    """A line no class fits, stated by one rank: what failed there is not known, so neither is
    whether it is a fault every rank met alike (a library's error raised on each) or one that
    began on that rank. The rank is a candidate, not named."""
    origin = hypothesis.originating
    if origin is None or origin.rank is None or not hypothesis.traits.unread:
        return
    located = hypothesis.culprit.finding if hypothesis.culprit is not None else None
    if hypothesis.dump_candidate is not None or (located and located.mechanism != "stated"):
        return  # located by other evidence (the peers' reports, the dumps), not by the line
    rank = origin.rank
    _leave_undetermined(
        hypothesis,
        origin.host,
        (rank,),
        f"rank {rank} printed a failure no class fits: whether the other ranks met it too, or "
        "it began there, is not known",
    )


def _stated(hypothesis: Hypothesis) -> Finding | None:
    """The finding behind a rank the hypothesis already has: its lines, its dumps, its symptoms."""
    if hypothesis.culprit is not None and hypothesis.culprit.finding is not None:
        return hypothesis.culprit.finding
    candidate = hypothesis.dump_candidate
    if candidate is not None:
        ranks = tuple(candidate.ranks)
        single = len(ranks) == 1
        return Finding(
            ranks[0] if single else None,
            "flight_recorder",
            RankBasis.inferred,
            f"the collectives' progress in the Flight Recorder dumps single out rank(s) "
            f"{', '.join(str(r) for r in ranks)}",
            candidates=() if single else ranks,
            reason="" if single else "the dumps single out these ranks together",
        )
    rank = hypothesis.originating.rank if hypothesis.originating else None
    if rank is None:
        return None
    line = next((m for m in hypothesis.roots if m.event.rank == rank), None)
    if line is None:
        return None
    basis = basis_of(line)
    if basis is RankBasis.launcher:
        return Finding(
            rank,
            "pid_join",
            basis,
            f"{line.signature_id} names a pid or local rank that another line ties to rank {rank}",
            "the pid is assumed not reused between the lines joined",
        )
    return Finding(
        rank, "stated", basis, f"{line.signature_id} was printed by or names rank {rank}"
    )


def _inferred(
    hypothesis: Hypothesis, symptoms: Sequence[Match], matches: Sequence[Match]
) -> Finding:
    """A root cause whose lines name no rank: joined through a pid or local rank, or, for a
    fault of one process, the rank absent from the peers' reports."""
    traits = hypothesis.traits
    if traits.job_wide or traits.acts_on_job:
        return Finding(
            None,
            "undetermined",
            reason=f"{hypothesis.failure_class} concerns the whole job, not one rank",
        )
    if not hypothesis.roots:
        return Finding(None, "undetermined", reason="no line in evidence names a rank")
    finding = pid_join(hypothesis.roots, matches) or single_process(matches)
    if finding is None and all(
        m.event.rank is None and m.signature.traits.locates_origin for m in hypothesis.roots
    ):
        finding = failed_on_its_own(matches)
    if finding is None and any(_one_process(m) for m in hypothesis.roots):
        relayed = [m for m in symptoms if m.signature.traits.relay in (Relay.peer, Relay.waiting)]
        reporters = ranks_in(relayed)
        if reporters:
            kind = relayed[0].signature.traits.relay
            finding = narrow(absent_from_symptoms(reporters, matches, kind), relayed, matches)
            if finding.rank is not None:
                finding = Finding(
                    finding.rank,
                    finding.mechanism,
                    finding.basis,
                    f"{hypothesis.roots[0].signature_id} names one process but no rank; "
                    + finding.evidence,
                    finding.caveat,
                    thin=True,
                )
    if finding is None:
        return Finding(None, "undetermined", reason="no line in evidence names a rank")
    if finding.rank is not None:
        host = hypothesis.originating.host if hypothesis.originating else None
        host = host or next((m.event.host for m in matches if m.event.rank == finding.rank), None)
        local = hypothesis.originating.local_rank if hypothesis.originating else None
        pid = hypothesis.originating.pid if hypothesis.originating else None
        hypothesis.originating = Attribution(finding.rank, local, host, pid)
    return finding


def _one_process(match: Match) -> bool:
    """Whether the line is about one process (it names its pid or local rank)."""
    return "pid" in match.captures or match.event.who.local_rank is not None


def _lead_without_a_root(
    hypotheses: list[Hypothesis],
    culprit: Culprit | None,
    from_dumps: Sequence[Hypothesis],
    matches: Sequence[Match],
) -> list[Hypothesis]:
    """No root cause precedes the symptoms: the collectives' progress (dumps), else the ranks
    the symptoms point at, explain them."""
    inferred = _from_culprit(culprit, matches) if culprit is not None else None
    dump = from_dumps[0] if from_dumps else None
    if dump is not None and inferred is not None:
        if _same_ranks(dump, inferred):
            dump.prior += (1.0 - dump.prior) * DUMP_AND_SYMPTOMS_AGREE
        elif culprit_confidence(culprit) > dump.prior:  # type: ignore[arg-type]
            return [inferred, *from_dumps, *hypotheses]
        return [*from_dumps, inferred, *hypotheses]
    if dump is not None:
        return [*from_dumps, *hypotheses]
    return [inferred, *hypotheses] if inferred is not None else hypotheses


def _with_dumps_behind_a_root(
    hypotheses: list[Hypothesis], from_dumps: Sequence[Hypothesis]
) -> list[Hypothesis]:
    """A root cause is in evidence: dumps that name the same rank corroborate it; others are
    kept as ranked alternatives."""
    top = hypotheses[0]
    agreeing = [d for d in from_dumps if _same_ranks(d, top)]
    if agreeing:
        top.prior += (1.0 - top.prior) * DUMP_AND_SYMPTOMS_AGREE
    return [*hypotheses, *(d for d in from_dumps if d not in agreeing)]


def _same_ranks(a: Hypothesis, b: Hypothesis) -> bool:
    return (
        a.originating is not None
        and b.originating is not None
        and a.originating.rank is not None
        and a.originating.rank == b.originating.rank
    )
