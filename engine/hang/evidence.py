"""Evidence and wording shared by the candidate builders: what dumps show, said briefly.

Consumes group progress and collective entries; produces `DumpEvidence` records and the short
phrases candidates are written in (rank lists folded into ranges, an op with its sizes and
dtypes, singular or plural verbs).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from denpex.hang.dumps import Collective, utc_at
from denpex.hang.models import DumpEvidence
from denpex.hang.progress import NS_PER_S, Group, RankInGroup

MAX_SOURCES = 3
"""Dump files named per evidence line; the rest are counted."""


def evidence(
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
        text=f"{who(ranks)} {what}",
        process_group=group.name,
        seq=seq if entry is not None or not require_seq else None,
        op=entry.op if entry else None,
        call_site=entry.call_site if entry else None,
        time=when(entry.created_ns) if entry else None,
    )


def last_seen(present: Mapping[int, RankInGroup], ranks: list[int], group: Group) -> DumpEvidence:
    """Where ranks that never entered the stuck collective were last seen in this group."""
    lasts = {r: present[r].entries[-1] if present[r].entries else None for r in ranks}
    enqueued = sorted({present[r].last_enqueued for r in ranks}, key=none_first)
    newest = max((e for e in lasts.values() if e), key=lambda e: e.record_id, default=None)
    sources = [present[r].capture.dump.source for r in ranks]
    return DumpEvidence(
        ranks=ranks,
        sources=sources[:MAX_SOURCES],
        more_sources=max(0, len(sources) - MAX_SOURCES),
        text=(
            f"{who(ranks)} last enqueued seq {seqs(enqueued)} in group {group.name}, completed "
            f"{seqs(sorted({present[r].last_completed for r in ranks}, key=none_first))}; "
            "no entry for any later collective of this group"
        ),
        process_group=group.name,
        seq=newest.seq if newest else None,
        op=newest.op if newest else None,
        call_site=newest.call_site if newest else None,
        time=when(newest.created_ns) if newest else None,
    )


def created(present: Mapping[int, RankInGroup], ranks: Iterable[int], seq: int) -> int | None:
    times = [
        e.created_ns
        for r in ranks
        for e in present[r].by_seq.get(seq, [])[:1]
        if e.created_ns is not None
    ]
    return min(times, default=None)


def frontier_time(present: Mapping[int, RankInGroup]) -> int | None:
    times = [p.entries[-1].created_ns for p in present.values() if p.entries]
    known = [t for t in times if t is not None]
    return max(known, default=None)


def when(ns: int | None) -> datetime | None:
    return utc_at(ns / NS_PER_S) if ns else None


def none_first(value: int | None) -> int:
    return -1 if value is None else value


def seqs(values: list[int | None]) -> str:
    shown = ["none" if v is None else str(v) for v in values]
    return shown[0] if len(shown) == 1 else "/".join(shown)


def group_label(group: Group) -> str:
    return f"{group.name} ({group.desc})" if group.desc else group.name


def plural(ranks: list[int], one: str, several: str) -> str:
    return one if len(ranks) == 1 else several


def has(ranks: list[int]) -> str:
    return plural(ranks, "has", "have")


def who(ranks: list[int]) -> str:
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {ranks_text(ranks)}"


def describe(entries: list[Collective]) -> str:
    parts = []
    for e in entries:
        sizes = shapes(e.input_sizes)
        dtypes = ",".join(sorted(set(e.input_dtypes))) or "-"
        parts.append(f"{e.op} {sizes} {dtypes}")
    return " + ".join(parts)


def shapes(shapes: tuple[tuple[int, ...], ...]) -> str:
    text = "[" + ", ".join("x".join(map(str, s)) or "scalar" for s in shapes[:4]) + "]"
    return text if len(shapes) <= 4 else text[:-1] + f", ... {len(shapes)} tensors]"


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
