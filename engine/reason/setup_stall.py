"""A run that stopped while its ranks were forming the process group.

Consumes the matched lines (those whose signature announces a `stage` of forming the group),
the scanned inputs and the world size the evidence states; produces at most one
`SilentFinding` of class `rendezvous_failure`. No error is printed when ranks wait for peers
that never arrive: the log simply ends after "joining" announcements (Lightning's
`Initializing distributed: GLOBAL_RANK`, the store-based barrier's `Added key`, DeepSpeed's and
Megatron's `initializing torch distributed`). Where the evidence shows the group formed or the
run went on (a `joined` line, training progress or other lines after the last announcement),
there is no finding. It is read from where a log stops, which a pasted excerpt cut at the same
place cannot be told apart from, so it is always a suspicion below the diagnosis threshold.
"""

from __future__ import annotations

from collections.abc import Sequence

from denpex.events import Match
from denpex.match.scan import ScannedInput
from denpex.models import SilentFinding
from denpex.reason.root_causes import evidence_of

TRAILING_LINES = 4
"""Lines an input may still hold after its last announcement (a blank line, a library's
start-up notice) and still be said to stop there."""
CONFIDENCE = 0.35
MAX_EVIDENCE = 8
RANK_CAPTURES = ("claimed_rank", "rank", "pg_rank")


def _rank(match: Match) -> int | None:
    for name in RANK_CAPTURES:
        value = match.captures.get(name)
        if value is not None and value.isdigit() and len(value) <= 9:
            return int(value)
    return match.event.rank


def stalled_in_setup(
    matches: Sequence[Match], inputs: Sequence[ScannedInput], world_size: int | None
) -> SilentFinding | None:
    joining = [m for m in matches if m.signature.stage == "joining"]
    if not joining or any(m.signature.stage == "joined" for m in matches):
        return None
    last_line: dict[str, int] = {}
    for match in joining:
        source = match.event.source
        last_line[source] = max(last_line.get(source, 0), match.event.line)
    for scanned in inputs:
        stop = last_line.get(scanned.name)
        if any(stop is None or record.line > stop for record in scanned.progress):
            return None  # training went on, in this input or another one
        if stop is not None and scanned.lines - stop > TRAILING_LINES:
            return None  # the log goes on after the announcements
    if any(m.event.line > last_line.get(m.event.source, 0) for m in matches):
        return None  # something else was said after them
    announced = sorted({r for r in map(_rank, joining) if r is not None})
    if world_size is not None and announced:
        count = f"{len(announced)} of {world_size} ranks announced"
    elif announced:
        count = f"ranks {', '.join(map(str, announced[:8]))} announced"
    else:
        count = "the ranks announced"
    return SilentFinding(
        failure_class="rendezvous_failure",
        title=f"The log stops while the ranks join the process group ({count}; nothing after)",
        detector="setup.stalled",
        ranks=[],
        confidence=CONFIDENCE,
        suspicion=True,
        caveat=(
            "Read from where the log stops, not from an error: ranks waiting for peers that "
            "never arrive print nothing until a timeout, if one is set. An excerpt cut at this "
            "point looks the same; ranks missing from the announcements may simply be in "
            "other logs."
        ),
        measurements={"announced_ranks": float(len(announced))},
        evidence=[evidence_of(m) for m in joining[-MAX_EVIDENCE:]],
    )
