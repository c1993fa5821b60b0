"""Stragglers: a rank (or a host's ranks) persistently slower than its peers.

Consumes the per-emitter progress series; produces `SilentFinding`s of class `straggler`. Each
rank's step times (compute time when the script prints it, as it excludes waiting for peers in
collectives; else step time; else the time between its progress lines) are compared with its
peers' by robust statistics: a rank is slow when its median lies far outside the spread of the
ranks' medians (median and MAD, estimated again without the candidates so that several slow
ranks do not hide each other; no fixed number of seconds) and it is slower than the step's
median rank in most steps. When half the ranks or more are slow, neither half is an outlier and
nothing is reported. The cost assumes synchronous training: every rank waits for the
slowest each step, so the excess time is paid by every GPU of the job. A progress line stands
for every step since the rank's previous one (a trainer that logs every N steps prints the
interval's average; a long run's lines are sampled), so each line's excess counts that many
steps.
"""

from __future__ import annotations

from collections import defaultdict

from denpex.models import SilentFinding
from denpex.progress.series import Sample, Series
from denpex.silent.common import evidence_of, median, scaled_mad

MIN_PEERS = 3
"""Fewer emitters cannot tell which one is the odd one out."""
MIN_STEPS = 6
ROBUST_Z = 5.0
"""How many robust standard deviations of the ranks' medians a slow rank lies above them."""
CANDIDATE_Z = 3.5
"""Ranks beyond this are left out when the peers' spread is estimated a second time."""
RELATIVE_FLOOR = 0.02
"""The spread is never taken below this share of the median: identical ranks have MAD 0."""
PERSISTENCE = 0.75
"""Share of common steps in which the slow rank is slower than the step's median rank."""
WARMUP_SHARE = 0.1

CAVEAT = (
    "Read from the step times the ranks print. Cost assumes synchronous data-parallel training "
    "(every rank waits for the slowest each step) and one GPU per rank."
)


def _centre_and_spread(values: list[float]) -> tuple[float, float]:
    centre = median(values)
    return centre, max(scaled_mad(values, centre), RELATIVE_FLOOR * centre, 1e-9)


def _steady(samples: list[Sample]) -> list[Sample]:
    """Without the first steps (compilation, cache warm-up) and without non-finite values."""
    usable = [s for s in samples if s.value == s.value and s.value >= 0]
    skip = max(1, int(len(usable) * WARMUP_SHARE))
    return usable[skip:] if len(usable) > skip + MIN_STEPS else usable


def _steps_each(samples: list[Sample]) -> dict[int, int]:
    """How many steps each sample stands for: those since the emitter's previous usable line
    (1 for the first, and where the step went back, as after a restart)."""
    usable = [s for s in samples if s.value == s.value and s.value >= 0]
    counts: dict[int, int] = {}
    previous = None
    for sample in usable:
        gap = sample.step - previous if previous is not None else 1
        counts[sample.step] = gap if gap > 0 else 1
        previous = sample.step
    return counts


def find_stragglers(series: list[Series]) -> list[SilentFinding]:
    every = {s.emitter: s.step_times() for s in series}
    times = {e: _steady(t) for e, t in every.items()}
    times = {e: t for e, t in times.items() if len(t) >= MIN_STEPS}
    if len(times) < MIN_PEERS:
        return []
    medians = {e: median([s.value for s in t]) for e, t in times.items()}
    centre, spread = _centre_and_spread(list(medians.values()))
    # Slow ranks inflate the MAD they are judged by: estimate it again without the candidates.
    peers = [m for m in medians.values() if (m - centre) / spread <= CANDIDATE_Z]
    if len(peers) >= MIN_PEERS and len(peers) > len(medians) / 2:
        centre, spread = _centre_and_spread(peers)
    per_step: dict[int, dict[object, Sample]] = defaultdict(dict)
    for emitter, samples in times.items():
        for sample in samples:
            per_step[sample.step][emitter] = sample
    slow = []
    for emitter, value in medians.items():
        z = (value - centre) / spread
        if z <= ROBUST_Z:
            continue
        common = [at for at in per_step.values() if emitter in at and len(at) >= MIN_PEERS]
        slower = [at for at in common if at[emitter].value > median([s.value for s in at.values()])]
        if not common or len(slower) / len(common) < PERSISTENCE:
            continue
        stands_for = _steps_each(every[emitter])
        excess = sum(
            (at[emitter].value - median([s.value for e, s in at.items() if e != emitter]))
            * stands_for.get(at[emitter].step, 1)
            for at in common
        )
        steps = sum(stands_for.get(at[emitter].step, 1) for at in common)
        slow.append((emitter, value, z, len(slower) / len(common), max(excess, 0.0), slower, steps))
    if not slow:
        return []
    findings = []
    gpus = len(times)
    for emitter, value, z, persistence, excess, slower, steps in slow:
        first = slower[0][emitter]
        worst = max(slower, key=lambda at: at[emitter].value)[emitter]
        gpu_hours = excess * gpus / 3600
        findings.append(
            SilentFinding(
                failure_class="straggler",
                title=(
                    f"{emitter.label()} is persistently slower than its peers: median step "
                    f"{value:.3g} s against {centre:.3g} s ({value / centre - 1:+.0%}), slower "
                    f"in {persistence:.0%} of steps; about {gpu_hours:.3g} GPU-hours lost"
                ),
                detector="stragglers.step_time",
                step=first.step,
                ranks=[emitter.rank] if emitter.rank is not None else [],
                hosts=[emitter.host] if emitter.host else [],
                confidence=round(min(0.85, 0.55 + 0.3 * persistence), 2),
                caveat=CAVEAT,
                measurements={
                    "median_step_s": round(value, 6),
                    "peer_median_step_s": round(centre, 6),
                    "robust_z": round(z, 2),
                    "slower_share": round(persistence, 3),
                    "excess_s": round(excess, 3),
                    "steps_counted": steps,
                    "gpus": gpus,
                    "gpu_hours_lost": round(gpu_hours, 6),
                },
                evidence=[evidence_of(first.record), evidence_of(worst.record)],
            )
        )
    return _by_host(findings)


def _by_host(findings: list[SilentFinding]) -> list[SilentFinding]:
    """Slow ranks that share a host are reported once, as the host."""
    hosts: dict[str, list[SilentFinding]] = defaultdict(list)
    for finding in findings:
        if finding.hosts:
            hosts[finding.hosts[0]].append(finding)
    merged = [f for f in findings if not f.hosts or len(hosts[f.hosts[0]]) == 1]
    for host, group in hosts.items():
        if len(group) < 2:
            continue
        ranks = sorted(r for f in group for r in f.ranks)
        lost = max(f.measurements["gpu_hours_lost"] for f in group)  # they wait together
        merged.append(
            group[0].model_copy(
                update={
                    "title": f"host {host} (ranks {ranks}) is persistently slower than its "
                    f"peers; about {lost:.3g} GPU-hours lost",
                    "ranks": ranks,
                    "step": min(f.step or 0 for f in group),
                    "evidence": [e for f in group for e in f.evidence][:8],
                    "measurements": {**group[0].measurements, "gpu_hours_lost": round(lost, 6)},
                }
            )
        )
    return merged
