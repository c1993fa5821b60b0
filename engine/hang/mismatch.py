"""Mismatched collectives: members that called a different op, sizes or dtypes at one seq id.

Consumes a group's present members and their entries by sequence id; produces the earliest
sequence id every present buffer still holds where members disagree, and `mismatched`
candidates: the minority against the majority, or both sides of a tie. Every shared sequence id
is compared, not only the stuck one, because a size mismatch can also "complete" wrongly and
let the odd rank run ahead.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from denpex.hang.dumps import Collective
from denpex.hang.evidence import created, describe, evidence, group_label, ranks_text, when, who
from denpex.hang.models import Candidate, CulpritKind
from denpex.hang.progress import Group, RankInGroup

MISMATCH_MAJORITY_OF_ALL = 0.85  # the majority outnumbers every other member, dump or not
MISMATCH_MAJORITY_OF_PRESENT = 0.6
MISMATCH_TIE = 0.4

# Ops whose tensor sizes legitimately differ between ranks; only op and dtypes must agree.
_SIZES_DIFFER = {"gather", "scatter", "all_to_all", "alltoall", "alltoall_base", "all_to_allv"}
_OUTPUTS_AGREE = {"all_gather", "allgather", "_allgather_base", "all_gather_into_tensor"}
_INPUTS_AGREE = {"reduce_scatter", "_reduce_scatter_base", "reduce_scatter_tensor"}

Signature = tuple[tuple[object, ...], ...]


def signature(entries: list[Collective]) -> Signature:
    """What must agree across ranks at one sequence id (several entries when coalesced)."""
    parts = []
    for e in entries:
        op = _op_name(e.op)
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


@functools.lru_cache(maxsize=4096)
def _op_name(op: str) -> str:
    """`all_reduce` of `gloo:all_reduce`; split once per distinct op, not once per entry."""
    return op.rsplit(":", 1)[-1]


def first_mismatch(
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
                variants.setdefault(seq, {}).setdefault(signature(entries), []).append(rank)
    for seq in sorted(variants):
        if len(variants[seq]) > 1:
            return seq, sorted(variants[seq].values(), key=lambda ranks: (-len(ranks), ranks))
    return None


def mismatch_candidates(
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
                op=describe(mine),
                since=when(created(present, [*ranks, *rest], seq)),
                confidence=confidence,
                summary=(
                    f"{who(ranks)} called {describe(mine)} at seq {seq} of group "
                    f"{group_label(group)}, where {who(rest)} called {describe(theirs)}"
                ),
                evidence=[
                    evidence(present, ranks, group, seq, f"called {describe(mine)}"),
                    evidence(present, rest, group, seq, f"called {describe(theirs)}"),
                ],
                caveats=caveats,
            )
        )
    return candidates
