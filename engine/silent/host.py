"""What `denpex run`'s host telemetry says: GPU errors, lost GPUs, throttling, memory shortage.

Consumes the evidence's `HostTelemetry` (samples of nvidia-smi, /proc/meminfo and
/proc/pressure/memory; the tools' states from host.json); produces `SilentFinding`s, each
pointing at the telemetry line it rests on. Every tool that was missing or failed is already
among the evidence's warnings (`HostTelemetry.not_gathered`), so every view says it. The
checks' classes, thresholds, confidences and caveats are data (`host.yaml`). The kernel
log's Xid and oom-killer lines are not read here: `dmesg.log` is scanned as a kernel log, by
the signatures.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from functools import cache
from importlib import resources
from typing import Any

import yaml

from denpex.models import Evidence, SilentFinding
from denpex.telemetry import GpuSample, HostSample, HostTelemetry


@cache
def checks() -> Mapping[str, Any]:
    text = resources.files("denpex.silent").joinpath("host.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)["checks"]


def _time(sample: HostSample) -> datetime | None:
    try:
        return datetime.fromisoformat(sample.time) if sample.time else None
    except ValueError:
        return None


def _evidence(sample: HostSample) -> Evidence:
    return Evidence(
        source=sample.source,
        line=sample.line,
        host=sample.host,
        time=_time(sample),
        text=sample.text,
    )


def _finding(
    check: str, sample: HostSample, measurements: dict[str, float], **words: object
) -> SilentFinding:
    spec = checks()[check]
    return SilentFinding(
        failure_class=spec["failure_class"],
        title=spec["title"].format(host=sample.host or sample.source, **words),
        detector=f"telemetry.{check}",
        hosts=[sample.host] if sample.host else [],
        confidence=spec["confidence"],
        suspicion=spec["suspicion"],
        caveat=" ".join(spec["caveat"].split()),
        measurements=measurements,
        evidence=[_evidence(sample)],
    )


def _integer(value: str | None) -> int | None:
    try:
        return int(str(value).strip(), 0)
    except (TypeError, ValueError):
        return None  # [N/A], [Not Supported], an empty field


def _by_host(samples: tuple[HostSample, ...]) -> dict[str, list[HostSample]]:
    hosts: dict[str, list[HostSample]] = {}
    for sample in samples:
        hosts.setdefault(sample.host or sample.source, []).append(sample)
    return hosts


def _ecc(samples: list[HostSample]) -> list[SilentFinding]:
    field = checks()["gpu_ecc_uncorrected"]["field"]
    found: list[SilentFinding] = []
    seen: set[str] = set()
    for sample in samples:
        for gpu in sample.gpus or ():
            count = _integer(gpu.fields.get(field))
            if count and gpu.index not in seen:
                seen.add(gpu.index)
                found.append(
                    _finding(
                        "gpu_ecc_uncorrected",
                        sample,
                        {"gpu": float(_integer(gpu.index) or 0), "uncorrected_errors": count},
                        gpu=gpu.index,
                        value=count,
                    )
                )
    return found


def _lost(samples: list[HostSample]) -> list[SilentFinding]:
    most = 0
    for sample in samples:
        listed = len(sample.gpus) if sample.gpus is not None else None
        if listed is None or listed < most:
            if most:
                return [
                    _finding(
                        "gpu_lost",
                        sample,
                        {"gpus_before": most, "gpus_after": listed or 0},
                        before=most,
                        after=listed or "none (nvidia-smi gave nothing)",
                    )
                ]
            continue
        most = max(most, listed)
    return []


def _throttle(samples: list[HostSample]) -> list[SilentFinding]:
    spec = checks()["gpu_throttle"]
    reasons = {int(bit): name for bit, name in spec["reasons"].items()}
    first: dict[str, tuple[HostSample, GpuSample]] = {}
    counts: dict[str, int] = {}
    named: dict[str, set[str]] = {}
    for sample in samples:
        for gpu in sample.gpus or ():
            active = _integer(gpu.fields.get(spec["field"])) or 0
            hits = {name for bit, name in reasons.items() if active & bit}
            if hits:
                first.setdefault(gpu.index, (sample, gpu))
                counts[gpu.index] = counts.get(gpu.index, 0) + 1
                named.setdefault(gpu.index, set()).update(hits)
    found = []
    for index, (sample, gpu) in first.items():
        temperatures = [
            t
            for s in samples
            for g in s.gpus or ()
            if g.index == index and (t := _integer(g.fields.get("temperature.gpu"))) is not None
        ]
        measurements: dict[str, float] = {"samples_throttled": counts[index]}
        if temperatures:
            measurements["max_temperature_c"] = max(temperatures)
        found.append(
            _finding(
                "gpu_throttle",
                sample,
                measurements,
                gpu=gpu.index,
                reasons=", ".join(sorted(named[index])),
                count=counts[index],
            )
        )
    return found


def _memory(samples: list[HostSample]) -> list[SilentFinding]:
    spec = checks()["host_memory_low"]
    for sample in samples:
        total = sample.meminfo.get("MemTotal_kB")
        available = sample.meminfo.get("MemAvailable_kB")
        full = sample.pressure.get("full_avg10")
        what = []
        measurements: dict[str, float] = {}
        if total and available is not None:
            fraction = available / total
            measurements["available_fraction"] = round(fraction, 4)
            if fraction <= spec["available_fraction_at_most"]:
                what.append(f"{available // 1024} MiB of {total // 1024} MiB available")
        if full is not None:
            measurements["pressure_full_avg10"] = full
            if full >= spec["pressure_full_avg10_at_least"]:
                what.append(f"every task stalled on memory {full:.0f}% of the last 10 s")
        if what:
            return [_finding("host_memory_low", sample, measurements, what="; ".join(what))]
    return []


def host_findings(telemetry: HostTelemetry) -> list[SilentFinding]:
    """Every check's findings, host by host, the certain before the suspicions."""
    findings: list[SilentFinding] = []
    for samples in _by_host(telemetry.samples).values():
        findings += _ecc(samples) + _lost(samples) + _throttle(samples) + _memory(samples)
    findings.sort(key=lambda f: (f.suspicion, -f.confidence))
    return findings
