"""Prometheus metrics of one API process: requests by route and status, and diagnoses by
status with their latency.

Consumes what the app reports; produces the text exposition `/metrics` serves. Each app has its
own registry, so several apps in one process (tests, replicas) never share counters.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass
class ApiMetrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        self.requests = Counter(
            "denpex_http_requests",
            "HTTP requests answered, by route template and status code",
            ["route", "status"],
            registry=self.registry,
        )
        self.diagnoses = Counter(
            "denpex_diagnoses",
            "Diagnoses produced, by diagnosis status",
            ["status"],
            registry=self.registry,
        )
        self.diagnosis_seconds = Histogram(
            "denpex_diagnosis_seconds",
            "Wall time of one diagnosis, reading the body included",
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
            registry=self.registry,
        )

        self.jobs = Counter(
            "denpex_jobs",
            "Diagnosis jobs, counted as they are queued and as they end (done or failed)",
            ["state"],
            registry=self.registry,
        )

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
