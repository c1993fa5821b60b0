"""Cross-replica divergence: values that data-parallel replicas must agree on, and do not.

Consumes the per-emitter progress series and the probe's per-layer records; produces
`SilentFinding`s of class `silent_data_corruption`, always as a suspicion with a capped
confidence. Which printed values must agree is learnt from the run itself: a value (grad norm
after the all-reduce, an all-reduced loss, a parameter norm, a probe checksum) counts only when
every rank printed the same for at least MIN_AGREEING steps before the first step they differ.
Local losses, which differ every step, never qualify. At that step the ranks outside the
majority value are the suspects; with two ranks, neither can be told from the other.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable

from denpex.models import Evidence, SilentFinding
from denpex.progress.series import ProgressRecord, Series
from denpex.silent.common import evidence_of

VALUES = ("grad_norm", "loss", "param_norm")
MIN_AGREEING = 5
CONFIDENCE_CAP = 0.45
CAVEAT = (
    "A suspicion, not a certainty: replicas that agreed for every earlier step disagree here. "
    "A flipped bit or a faulty GPU does this, and so do a rank-dependent code path, an "
    "unsynchronised random seed or a parameter excluded from the all-reduce. Re-run the step "
    "on other hardware (or run the GPU's diagnostics, e.g. dcgmi diag -r 3) before draining."
)

Key = Hashable


def _same(a: Hashable, b: Hashable) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


def first_disagreement(
    by_step: dict[int, dict[Key, tuple[Hashable, ProgressRecord]]],
) -> tuple[int, list[Key], dict[Key, tuple[Hashable, ProgressRecord]], int] | None:
    """(step, odd emitters, that step's values, agreeing steps before it), when the values
    agreed on every earlier step shared by two or more emitters."""
    agreeing = 0
    for step in sorted(by_step):
        at = by_step[step]
        if len(at) < 2:
            continue
        values = [v for v, _ in at.values()]
        if all(_same(v, values[0]) for v in values):
            agreeing += 1
            continue
        if agreeing < MIN_AGREEING:
            return None  # these values are not the kind replicas share
        counts = Counter("nan" if isinstance(v, float) and math.isnan(v) else v for v in values)
        majority, votes = counts.most_common(1)[0]
        if votes * 2 > len(values):
            odd = [
                e
                for e, (v, _) in at.items()
                if ("nan" if isinstance(v, float) and math.isnan(v) else v) != majority
            ]
        else:
            odd = list(at)
        return step, odd, at, agreeing
    return None


def _finding(
    what: str,
    step: int,
    odd: list[Key],
    at: dict[Key, tuple[Hashable, ProgressRecord]],
    agreeing: int,
    layer: str | None = None,
) -> SilentFinding:
    odd_records = [at[e][1] for e in odd]
    ranks = sorted({r.rank for r in odd_records if r.rank is not None})
    hosts = sorted({r.who.host for r in odd_records if r.who.host})
    others = [record for e, (_, record) in at.items() if e not in odd][:2]
    told = len(odd) < len(at)
    where = f"rank(s) {ranks}" if ranks else "a replica"
    return SilentFinding(
        failure_class="silent_data_corruption",
        title=(
            f"suspected silent data corruption: {where} printed a different {what} at step "
            f"{step}"
            + (f" in layer {layer}" if layer else "")
            + f" after the replicas agreed on {agreeing} earlier steps"
            + ("" if told else "; with no majority, the odd replica cannot be named")
        ),
        detector=f"replicas.{what.replace(' ', '_')}",
        step=step,
        ranks=ranks if told else [],
        hosts=hosts if told else [],
        layer=layer,
        confidence=CONFIDENCE_CAP if told else CONFIDENCE_CAP / 2,
        suspicion=True,
        caveat=CAVEAT,
        measurements={"agreeing_steps_before": agreeing, "replicas": len(at)},
        evidence=_evidence([*odd_records, *others]),
    )


def _evidence(records: Iterable[ProgressRecord]) -> list[Evidence]:
    return [evidence_of(r) for r in records][:6]


def from_progress(series: list[Series]) -> list[SilentFinding]:
    findings = []
    for name in VALUES:
        by_step: dict[int, dict[Key, tuple[Hashable, ProgressRecord]]] = defaultdict(dict)
        for s in series:
            if s.emitter.rank is None and s.emitter.local_rank is None:
                continue
            for sample in s.samples(name):
                if not sample.step_inferred:
                    by_step[sample.step][s.emitter] = (sample.value, sample.record)
        found = first_disagreement(by_step)
        if found is not None:
            findings.append(_finding(name.replace("_", " "), *found))
    return findings


def from_probe(records: list[ProgressRecord]) -> list[SilentFinding]:
    """Per-layer checksums of the probe: the first (step, layer) where replicas differ."""
    layer_order: dict[str, int] = {}
    by_layer: dict[str, dict[int, dict[Key, tuple[Hashable, ProgressRecord]]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    for record in records:
        point = record.point
        if point.layer is None or point.checksum is None or point.step is None:
            continue
        layer_order.setdefault(point.layer, len(layer_order))
        emitter = (record.rank, record.who.host, record.who.local_rank)
        by_layer[point.layer][point.step][emitter] = (point.checksum, record)
    first: tuple[tuple[int, int], SilentFinding] | None = None
    for layer, by_step in by_layer.items():
        found = first_disagreement(by_step)
        if found is None:
            continue
        order = (found[0], layer_order[layer])
        if first is None or order < first[0]:
            first = (order, _finding("parameter checksum", *found, layer=layer))
    return [first[1]] if first else []
