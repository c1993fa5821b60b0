"""Small phrases shared by the human-readable renderers."""

from __future__ import annotations

from datetime import datetime

from denpex.models import Evidence, RootCause


def ranks_text(ranks: list[int]) -> str:
    """`1, 4` for a few ranks, `0-63` for a contiguous run."""
    ordered = sorted(set(ranks))
    if len(ordered) > 2 and ordered == list(range(ordered[0], ordered[-1] + 1)):
        return f"{ordered[0]}-{ordered[-1]}"
    return ", ".join(str(r) for r in ordered)


def when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] if moment else "time unknown"


def where(root: RootCause, undetermined: str = "rank undetermined") -> str:
    """Rank (or local rank) and host where a root cause began, as far as the evidence says."""
    parts = []
    if len(root.originating_ranks) > 1:
        parts.append(f"ranks {ranks_text(root.originating_ranks)}")
    elif root.originating_rank is not None:
        parts.append(f"rank {root.originating_rank}")
    elif root.originating_local_rank is not None:
        parts.append(f"local rank {root.originating_local_rank}")
    elif undetermined:
        parts.append(undetermined)
    if root.originating_host:
        parts.append(f"host {root.originating_host}")
    finding = root.rank_finding
    if root.originating_rank is not None and finding is not None and finding.basis == "inferred":
        parts.append(f"inferred ({finding.mechanism.replace('_', ' ')}: {finding.evidence})")
    elif root.originating_rank is None and root.candidate_ranks:
        ranks = ", ".join(str(r) for r in root.candidate_ranks)
        parts.append(f"candidate rank(s) {ranks}: {root.candidate_reason}")
    return ", ".join(parts)


def evidence_label(line: Evidence) -> str:
    who = f" rank {line.rank}" if line.rank is not None else ""
    inferred = " (time inferred)" if line.time_inferred else ""
    return f"{line.source}:{line.line}{who} @ {when(line.time)}{inferred}"


def cascade(root: RootCause) -> str:
    explains = root.explains
    if not explains.events:
        return "no cascade attributed"
    ranks = ", ".join(str(r) for r in explains.ranks) or "unattributed ranks"
    return f"{explains.events} event(s) on rank(s) {ranks}: " + ", ".join(explains.signature_ids)
