"""What every process of a job must print alike, and the hypothesis when they do not.

Consumes the time-ordered matches; produces one `Hypothesis` per signature with an `agreement`
(see `denpex.signatures.signature.Agreement`) whose processes disagree: the network NCCL chose on
each process, the arguments each process passed to the collective at one opCount. Nothing in
such a line is abnormal on its own; the difference is the finding, and the signature's class
says what it means (transports that cannot talk to each other, collectives that do not match).

A process is its rank when the line or its prefix states one, else its host and pid, else the
input it came from. For events keyed by a sequence (an opCount), the earliest key that two or
more processes share and disagree on is the finding: later ones are often its consequence. The
origin is named only when one process alone differs from at least two that agree; a split with
no odd one out names no origin. A `distinct` agreement turns this around for values each process
claims alone (its global rank): one claimed twice while others go unclaimed is the finding.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from denpex.events import Attribution, Match
from denpex.ingest.numbers import identifier
from denpex.models import RankBasis
from denpex.reason.hypothesis import Hypothesis
from denpex.reason.origin import Finding

Process = tuple[str, ...]
Values = tuple[str, ...]


def _process(match: Match) -> Process:
    if match.event.rank is not None:
        return ("rank", str(match.event.rank))
    host = match.captures.get("host") or match.event.host
    pid = match.captures.get("pid") or (
        str(match.event.who.pid) if match.event.who.pid is not None else None
    )
    if host is not None and pid is not None:
        return ("process", host, pid)
    return ("input", match.event.source)


def _described(process: Process) -> str:
    if process[0] == "rank":
        return f"rank {process[1]}"
    if process[0] == "process":
        return f"pid {process[2]} on {process[1]}"
    return process[1]


def _values_text(names: Sequence[str], values: Values) -> str:
    return ", ".join(f"{name} {value}" for name, value in zip(names, values, strict=True))


def _first_disagreement(
    matches: Sequence[Match],
) -> tuple[dict[Values, list[Match]], Sequence[str]] | None:
    """The variants (values -> one match per process) at the earliest shared key that differs."""
    agreement = matches[0].signature.agreement
    assert agreement is not None
    by_key: dict[Values, dict[Process, Match]] = defaultdict(dict)
    for match in matches:
        key = tuple(match.captures.get(name, "") for name in agreement.key)
        by_key[key].setdefault(_process(match), match)
    for processes in by_key.values():  # keys in order of first appearance
        if len(processes) < 2:
            continue
        variants: dict[Values, list[Match]] = defaultdict(list)
        for match in processes.values():
            variants[tuple(match.captures.get(n, "") for n in agreement.values)].append(match)
        if len(variants) > 1:
            return dict(variants), agreement.values
    return None


def _hypothesis(variants: dict[Values, list[Match]], names: Sequence[str]) -> Hypothesis:
    ordered = sorted(variants.items(), key=lambda item: len(item[1]))
    (odd_values, odd), (common_values, common) = ordered[0], ordered[-1]
    sides = "; ".join(
        f"{', '.join(_described(_process(m)) for m in group)}: {_values_text(names, values)}"
        for values, group in sorted(variants.items(), key=lambda item: -len(item[1]))
    )
    lone = len(odd) == 1 and len(common) >= 2 and len(variants) == 2
    rank = odd[0].event.rank if lone else None
    originating = None
    finding = None
    if lone:
        who = odd[0].event.who
        originating = Attribution(
            rank=rank,
            local_rank=who.local_rank,
            host=odd[0].captures.get("host") or odd[0].event.host,
            pid=identifier(odd[0].captures.get("pid")) if who.pid is None else who.pid,
        )
        finding = Finding(
            rank,
            "odd_one_out",
            RankBasis.inferred,
            f"{_described(_process(odd[0]))} alone printed {_values_text(names, odd_values)} "
            f"where the others printed {_values_text(names, common_values)}",
            "the process that differs is where the programs diverged; which side holds the "
            "bug is for the code or the configuration to say",
        )
    roots = [*odd, *(m for values, group in ordered[1:] for m in group[:1])]
    return _finding_of(
        roots,
        finding or Finding(None, "undetermined", reason=f"the processes split evenly: {sides}"),
        originating,
    )


def _finding_of(
    roots: list[Match], finding: Finding, originating: Attribution | None = None
) -> Hypothesis:
    """The hypothesis an agreement signature's lines stand for, with what they say of the rank."""
    signature = roots[0].signature
    times = [m.event.time for m in roots if m.event.time is not None]
    return Hypothesis(
        failure_class=signature.failure_class or "unknown",
        signature=signature,
        roots=roots,
        prior=signature.confidence,
        originating=originating,
        first_seen=min(times) if times else None,
        finding=finding,
    )


def _duplicate_claims(matches: Sequence[Match]) -> Hypothesis | None:
    """Values each process must claim alone (its global rank), claimed twice while values of
    the job go unclaimed: two processes took the same identity (a launcher started more
    processes per node than it told them, or two nodes computed the same ranks). A restarted
    job claims every value again, so it is not taken for this: some value must be missing."""
    agreement = matches[0].signature.agreement
    assert agreement is not None and agreement.size is not None
    claims: dict[Values, list[Match]] = defaultdict(list)
    sizes: set[int] = set()
    for match in matches:
        claims[tuple(match.captures.get(n, "") for n in agreement.values)].append(match)
        if (size := identifier(match.captures.get(agreement.size))) is not None:
            sizes.add(size)
    if len(sizes) != 1:
        return None
    size = sizes.pop()
    twice = sorted(values for values, lines in claims.items() if len(lines) > 1)
    if not twice or len(claims) >= size:
        return None
    # Fewer claims than the job's size may be an excerpt of a restarted job claiming again; the
    # same value claimed by two different processes (two Slurm tasks, two hosts) is not.
    by_two = any(len({_process(m) for m in claims[values]}) > 1 for values in twice)
    if len(matches) < size and not by_two:
        return None
    names = agreement.values
    claimed = ", ".join(_values_text(names, v) for v in twice)
    roots = [lines[0] for values, lines in sorted(claims.items()) if values in twice]
    return _finding_of(
        roots,
        Finding(
            None,
            "undetermined",
            reason=f"{len(matches)} claims for a job of {size}: {claimed} claimed more than "
            f"once, {size - len(claims)} value(s) never claimed; the whole launch is at fault, "
            "not one process",
        ),
    )


def disagreements(matches: Sequence[Match]) -> list[Hypothesis]:
    """A hypothesis per agreement signature whose processes printed different values (or, for
    a `distinct` one, the same value twice while others of the job went unclaimed)."""
    by_signature: dict[str, list[Match]] = defaultdict(list)
    for match in matches:
        if match.signature.agreement is not None:
            by_signature[match.signature.id].append(match)
    found = []
    for group in by_signature.values():
        agreement = group[0].signature.agreement
        assert agreement is not None
        if agreement.distinct:
            if (duplicated := _duplicate_claims(group)) is not None:
                found.append(duplicated)
            continue
        disagreement = _first_disagreement(group)
        if disagreement is not None:
            found.append(_hypothesis(*disagreement))
    return found
