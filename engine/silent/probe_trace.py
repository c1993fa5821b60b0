"""The per-layer weight-delta trace `denpex.probe` writes: where an anomaly appeared first.

Consumes probe records (one per layer, rank and probed step); produces the first (step, layer)
whose weight update was non-finite or jumped far above that layer's own recent updates (robust:
median and MAD of its previous updates), with the ranks where it did, as a `ProbeAnomaly`.
Layers are ordered as the probe wrote them (the model's parameter order).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from denpex.progress.series import ProgressRecord
from denpex.silent.common import median, scaled_mad

MIN_HISTORY = 4
ROBUST_Z = 10.0
RELATIVE_FLOOR = 0.25


@dataclass(frozen=True)
class ProbeAnomaly:
    step: int
    layer: str
    non_finite: bool
    ratio: float
    """The update's norm over the layer's usual update norm."""
    records: tuple[ProgressRecord, ...]


def first_anomaly(records: list[ProgressRecord]) -> ProbeAnomaly | None:
    order: dict[str, int] = {}
    series: dict[tuple[str, object], list[ProgressRecord]] = defaultdict(list)
    for record in records:
        point = record.point
        if point.layer is None or point.step is None or point.get("delta_norm") is None:
            continue
        order.setdefault(point.layer, len(order))
        series[(point.layer, (record.rank, record.who.host))].append(record)
    hits: list[tuple[tuple[int, int], ProgressRecord, bool, float]] = []
    for (layer, _), rows in series.items():
        rows.sort(key=lambda r: r.point.step or 0)
        deltas = [r.point.values["delta_norm"] for r in rows]
        for i, value in enumerate(deltas):
            step = rows[i].point.step or 0
            if not math.isfinite(value):
                hits.append(((step, order[layer]), rows[i], True, math.inf))
                break
            history = [d for d in deltas[max(0, i - 8) : i] if math.isfinite(d)]
            if len(history) < MIN_HISTORY:
                continue
            level = median(history)
            spread = max(scaled_mad(history, level), RELATIVE_FLOOR * level, 1e-12)
            if value > level + ROBUST_Z * spread:
                hits.append(((step, order[layer]), rows[i], False, value / max(level, 1e-12)))
                break
    if not hits:
        return None
    first = min(hits, key=lambda h: h[0])
    same = [h for h in hits if h[0] == first[0]]
    return ProbeAnomaly(
        step=first[0][0],
        layer=first[1].point.layer or "",
        non_finite=first[2],
        ratio=first[3],
        records=tuple(h[1] for h in same),
    )
