"""A collective that times out after the training loop said it was over: the ranks disagree on
what runs after the loop.

Consumes the time-ordered matches; produces at most one `Hypothesis`. A trainer that announces
the end of its loop (a context signature of stage `finished`: Lightning's "`Trainer.fit`
stopped", the Hugging Face Trainer's "Training completed") has run the loop's own collectives on
every rank. A collective that then times out was issued by the code after the loop, and not by
every rank alike: a checkpoint save, an evaluation or an upload under `if rank == 0` that holds
a barrier or a gather, while the other ranks went on to exit or to another collective. The
signature of the announcement carries the class this stands for (`collective_mismatch`) and
what to do; the rank whose timeout follows the announcement is the one left in the extra
collective.

It is read from order alone (a rank only slow after the loop prints the same lines), so the
hypothesis keeps the announcement's modest prior, and it is not formed where a root cause
comes between the announcement and the timeout: that failure is what the others waited for.
"""

from __future__ import annotations

from collections.abc import Sequence

from denpex.events import Match
from denpex.models import RankBasis
from denpex.reason.hypothesis import Hypothesis
from denpex.reason.origin import Finding, basis_of
from denpex.signatures.signature import Role

FINISHED = "finished"
TIMEOUT_CLASS = "collective_timeout"


def _after(first: Match, then: Match) -> bool:
    """Whether `then` was printed after `first`: in one input by its line, else by the clock."""
    if first.event.source == then.event.source:
        return then.event.line > first.event.line
    if first.event.time is not None and then.event.time is not None:
        return then.event.time > first.event.time
    return False


def mismatched_after_the_loop(matches: Sequence[Match]) -> list[Hypothesis]:
    finishes = [m for m in matches if m.signature.stage == FINISHED]
    if not finishes:
        return []
    finish = finishes[0]
    timeouts = [
        m
        for m in matches
        if m.role is Role.symptom
        and m.signature.failure_class == TIMEOUT_CLASS
        and _after(finish, m)
    ]
    if not timeouts:
        return []
    first_timeout = timeouts[0]
    if any(
        m.role is Role.root_cause and _after(finish, m) and not _after(first_timeout, m)
        for m in matches
    ):
        return []
    ranks = sorted({m.event.rank for m in timeouts if m.event.rank is not None})
    rank = ranks[0] if len(ranks) == 1 else None
    stated = next((m for m in timeouts if m.event.rank == rank), None) if rank is not None else None
    basis = basis_of(stated) if stated is not None else None
    finding = (
        Finding(
            rank,
            "first_divergence",
            basis or RankBasis.inferred,
            f"rank {rank} timed out in a collective after the training loop had finished, "
            "when the loop's own collectives had completed on every rank",
            "the rank left waiting issued the extra collective, or its peers skipped one it "
            "expected; the code after the loop says which",
        )
        if rank is not None
        else Finding(
            None,
            "undetermined",
            reason=(
                f"ranks {', '.join(str(r) for r in ranks)} timed out after the loop"
                if ranks
                else "the timeout does not name its rank"
            ),
        )
    )
    signature = finish.signature
    return [
        Hypothesis(
            failure_class=signature.failure_class or "unknown",
            signature=signature,
            roots=[finish],
            prior=signature.confidence,
            originating=stated.event.who if stated is not None else None,
            first_seen=first_timeout.event.time,
            corroboration=timeouts,
            finding=finding,
        )
    ]
