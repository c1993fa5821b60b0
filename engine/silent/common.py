"""Robust statistics and evidence shared by the silent-failure checks.

Consumes progress records and numbers; produces medians, scaled MADs and contract `Evidence`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from denpex.ingest.timestamps import to_datetime
from denpex.models import Evidence
from denpex.progress.series import ProgressRecord

MAD_TO_SIGMA = 1.4826
"""A normal distribution's standard deviation is 1.4826 times its median absolute deviation."""


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def scaled_mad(values: Sequence[float], centre: float | None = None) -> float:
    """The median absolute deviation, scaled to estimate a standard deviation."""
    if not values:
        return 0.0
    centre = median(values) if centre is None else centre
    return MAD_TO_SIGMA * median([abs(v - centre) for v in values])


def finite(value: float) -> bool:
    return math.isfinite(value)


def evidence_of(record: ProgressRecord) -> Evidence:
    return Evidence(
        source=record.source,
        line=record.line,
        rank=record.rank,
        host=record.who.host,
        time=to_datetime(record.time),
        text=record.text,
        signature_id=f"progress.{record.point.format_id}",
    )
