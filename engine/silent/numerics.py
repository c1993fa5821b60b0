"""Numerical events in the training signal: first NaN/Inf, loss spike or divergence, fp16
loss-scale collapse, each with the step where it began and the ranks where it appeared first.

Consumes the per-emitter progress series; produces `SilentFinding`s of classes `nan_or_inf`,
`loss_divergence` and `loss_scale_underflow`. Loss is judged against the best level it reached
(the lowest rolling median so far, from the 16th point on) and the larger of that window's noise
and the typical noise so far (the MAD of step-to-step changes, which a downward trend does not
inflate), so the early descent, ordinary noise and a start that is quiet by chance do not count.
A point above that level by ROBUST_Z spreads begins a spike, and a spike most of whose following
points stay above it is a divergence. An inf or NaN gradient norm is normal under dynamic loss
scaling (the step is skipped), so it counts as a NaN onset only when the series shows no loss
scale.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import pairwise

from denpex.models import SilentFinding
from denpex.progress.series import Sample, Series
from denpex.silent.common import evidence_of, median, scaled_mad

WINDOW = 16
MIN_HISTORY = 16
ROBUST_Z = 8.0
RELATIVE_FLOOR = 0.05
"""The loss spread is never taken below this share of the loss level."""
SUSTAIN_LOOKAHEAD = 5
SUSTAIN_SHARE = 0.6
HALVINGS = 6
"""Consecutive reductions of the loss scale, without growth, that make a collapse (2^6 = 64x)."""
CALIBRATING_SCALE = 1000.0
"""A run of reductions that leaves the scale at this or above is the scaler settling after its
2^16 (DeepSpeed's older releases: 2^32) start, as a healthy fp16 run does in its first steps
(a real healthy CogVideo run halved 2^32 to 2^26 in six steps), not a collapse."""

NAN_CAVEAT = "The first non-finite value printed; the cause usually lies in the steps before it."
LOSS_CAVEAT = (
    "Judged from the printed loss against its best level so far; a data shift or a planned "
    "schedule change can look the same."
)
SCALE_CAVEAT = (
    "fp16 dynamic loss scaling halves the scale on every overflow; a long run of halvings "
    "without growth means every step overflows."
)


def _earliest(
    onsets: list[tuple[Series, Sample]],
) -> tuple[int, list[Series], list[Sample]]:
    step = min(sample.step for _, sample in onsets)
    first = [(s, sample) for s, sample in onsets if sample.step == step]
    return step, [s for s, _ in first], [sample for _, sample in first]


def _ranks(series: list[Series]) -> list[int]:
    return sorted({s.emitter.rank for s in series if s.emitter.rank is not None})


def _hosts(series: list[Series]) -> list[str]:
    return sorted({s.emitter.host for s in series if s.emitter.host})


def _finding(
    failure_class: str,
    onsets: list[tuple[Series, Sample]],
    title: Callable[[int, list[Series]], str],
    detector: str,
    confidence: float,
    caveat: str,
    measurements: dict[str, float],
) -> SilentFinding:
    step, where, samples = _earliest(onsets)
    return SilentFinding(
        failure_class=failure_class,
        title=title(step, where),
        detector=detector,
        step=step,
        ranks=_ranks(where),
        hosts=_hosts(where),
        confidence=confidence,
        caveat=caveat,
        measurements=measurements,
        evidence=[evidence_of(s.record) for s in samples[:8]],
    )


def _labels(series: list[Series]) -> str:
    return ", ".join(s.emitter.label() for s in series[:4]) + (" ..." if len(series) > 4 else "")


def first_non_finite(series: list[Series]) -> SilentFinding | None:
    onsets = []
    for s in series:
        scaled = bool(s.samples("loss_scale")) or bool(s.samples("overflow"))
        candidates = [x for x in s.samples("loss") if not math.isfinite(x.value)]
        if not scaled:
            candidates += [x for x in s.samples("grad_norm") if not math.isfinite(x.value)]
        candidates += [x for x in s.samples("nan_count") if x.value > 0]
        if candidates:
            onsets.append((s, min(candidates, key=lambda x: x.step)))
    if not onsets:
        return None
    return _finding(
        "nan_or_inf",
        onsets,
        lambda step, where: f"loss or gradients became NaN/Inf at step {step} on {_labels(where)}",
        "numerics.first_non_finite",
        0.9,
        NAN_CAVEAT,
        {},
    )


def _loss_onset(samples: list[Sample]) -> tuple[Sample, bool, float, float] | None:
    """The first point far above the best level so far: (point, sustained, level, spread)."""
    values = [s.value for s in samples]
    best: tuple[float, float] | None = None
    noises: list[float] = []
    for i in range(MIN_HISTORY, len(values)):
        window = values[max(0, i - WINDOW) : i]
        level = median(window)
        noise = scaled_mad([b - a for a, b in pairwise(window)], 0.0) / math.sqrt(2)
        noises.append(noise)
        # The noise is never taken below its typical level so far: the window with the lowest
        # level is often, by chance, also a quiet one, and its noise alone made ordinary
        # fluctuations of a long run look like spikes.
        spread = max(noise, median(noises), RELATIVE_FLOOR * abs(level), 1e-12)
        if best is None or level < best[0]:
            best = (level, spread)
        threshold = best[0] + ROBUST_Z * best[1]
        if values[i] <= threshold:
            continue
        ahead = values[i + 1 : i + 1 + SUSTAIN_LOOKAHEAD]
        sustained = bool(ahead) and sum(v > threshold for v in ahead) / len(ahead) >= SUSTAIN_SHARE
        return samples[i], sustained, best[0], best[1]
    return None


def loss_events(series: list[Series]) -> list[SilentFinding]:
    diverged, spiked = [], []
    measured: dict[str, float] = {}
    for s in series:
        losses = [x for x in s.samples("loss") if math.isfinite(x.value)]
        onset = _loss_onset(losses)
        if onset is None:
            continue
        sample, sustained, level, spread = onset
        (diverged if sustained else spiked).append((s, sample))
        measured.setdefault("loss_level_before", round(level, 6))
        measured.setdefault("loss_spread_before", round(spread, 6))
        measured.setdefault("loss_at_onset", round(sample.value, 6))
    if diverged:
        return [
            _finding(
                "loss_divergence",
                diverged,
                lambda step, where: (
                    f"loss diverged from step {step} on {_labels(where)}: it "
                    "rose far above its best level and stayed there"
                ),
                "numerics.loss_divergence",
                0.75,
                LOSS_CAVEAT,
                measured,
            )
        ]
    if spiked:
        return [
            _finding(
                "loss_divergence",
                spiked,
                lambda step, where: f"loss spike at step {step} on {_labels(where)} (recovered)",
                "numerics.loss_spike",
                0.4,
                LOSS_CAVEAT,
                measured,
            )
        ]
    return []


def _scale_collapse(samples: list[Sample]) -> tuple[Sample, Sample, int] | None:
    """(where the run of reductions began, its lowest point, reductions in it)."""
    run_start: Sample | None = None
    reductions = 0
    previous: Sample | None = None
    for sample in samples:
        # An overflow line states the scale it attempted, so it is a reduction on its own.
        before = sample.record.point.get("attempted_scale")
        if before is None and previous is not None:
            before = previous.value
        if before is not None and sample.value < before:
            if reductions == 0:
                run_start = sample
            reductions += 1
            if reductions >= HALVINGS and run_start is not None:
                lowest = min(
                    (s for s in samples if s.step >= run_start.step), key=lambda s: s.value
                )
                return run_start, lowest, reductions
        elif before is not None and sample.value > before:
            reductions = 0
        previous = sample
    return None


def loss_scale_collapse(series: list[Series]) -> SilentFinding | None:
    onsets = []
    lowest: float | None = None
    for s in series:
        scales = [x for x in s.samples("loss_scale") if math.isfinite(x.value)]
        found = _scale_collapse(scales)
        if found is None:
            continue
        start, low, _ = found
        if low.value >= CALIBRATING_SCALE:
            continue
        onsets.append((s, start))
        lowest = low.value if lowest is None else min(lowest, low.value)
    if not onsets:
        return None
    return _finding(
        "loss_scale_underflow",
        onsets,
        lambda step, where: (
            f"fp16 loss scale collapsed from step {step} on {_labels(where)}: "
            f"{HALVINGS}+ reductions in a row without growth, down to {lowest:g}"
        ),
        "numerics.loss_scale_collapse",
        0.8,
        SCALE_CAVEAT,
        {"lowest_loss_scale": lowest or 0.0},
    )


def find_numerical_events(series: list[Series]) -> list[SilentFinding]:
    found = [first_non_finite(series), loss_scale_collapse(series)]
    return [f for f in found if f is not None] + loss_events(series)
