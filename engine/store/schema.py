"""The tables of the incident store, as SQLAlchemy 2.x declarative models.

Consumes nothing; produces the ORM classes the store reads and writes and the metadata the
Alembic migrations are checked against. Masked line templates live in their own table, shared
by every incident that printed them, so each distinct template is embedded once.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, Float, ForeignKey, Integer, LargeBinary, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


class Base(DeclarativeBase):
    pass


class CurationState:
    """Where an incident stands with curators (stored as plain strings)."""

    not_queued = "not_queued"
    queued = "queued"
    confirmed = "confirmed"
    rejected = "rejected"
    """A curator took it off the queue as not worth a cause (a test job, a duplicate report)."""
    resolved = "resolved"
    """A promoted signature now settles it: re-diagnosed confident (`settled_by` names it)."""
    all = (not_queued, queued, confirmed, rejected, resolved)


class IncidentRow(Base):
    __tablename__ = "incidents"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    status: Mapped[str] = mapped_column(String(16))
    summary: Mapped[str] = mapped_column(Text)
    failure_class: Mapped[str | None] = mapped_column(String(64))
    answer_source: Mapped[str | None] = mapped_column(String(16))
    confidence: Mapped[float | None] = mapped_column(Float)
    input_digest: Mapped[str] = mapped_column(String(64), index=True)
    inputs: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    excerpt: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    diagnosis: Mapped[dict[str, Any]] = mapped_column(JSON)
    denpex_version: Mapped[str] = mapped_column(String(64))
    rules_version: Mapped[str] = mapped_column(String(64))
    llm_model: Mapped[str | None] = mapped_column(String(200))
    embedder: Mapped[str | None] = mapped_column(String(200))
    elapsed_ms: Mapped[int] = mapped_column(Integer)
    curation_state: Mapped[str] = mapped_column(String(16), index=True)
    confirmed_class: Mapped[str | None] = mapped_column(String(64))
    confirmed_by: Mapped[str | None] = mapped_column(String(200))
    confirmed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    confirmed_note: Mapped[str | None] = mapped_column(Text)
    curation_note: Mapped[str | None] = mapped_column(Text)
    settled_by: Mapped[str | None] = mapped_column(String(200))
    tenant: Mapped[str | None] = mapped_column(String(200), index=True)
    """The API tenant whose request this was; null for the command line."""

    lines: Mapped[list[IncidentTemplateRow]] = relationship(
        back_populates="incident",
        cascade="all, delete-orphan",
        order_by="IncidentTemplateRow.position",
    )


class TemplateRow(Base):
    """A distinct masked line; its id is the vector id in the similarity index."""

    __tablename__ = "templates"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    text: Mapped[str] = mapped_column(Text)


class IncidentTemplateRow(Base):
    __tablename__ = "incident_templates"

    incident_id: Mapped[str] = mapped_column(
        ForeignKey("incidents.id", ondelete="CASCADE"), primary_key=True
    )
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    template_id: Mapped[int] = mapped_column(ForeignKey("templates.id"), index=True)

    incident: Mapped[IncidentRow] = relationship(back_populates="lines")
    template: Mapped[TemplateRow] = relationship()


class NonceRow(Base):
    """A request nonce an API replica has accepted, kept for the freshness window: replicas
    sharing one store refuse a request replayed to any of them."""

    __tablename__ = "request_nonces"

    tenant: Mapped[str] = mapped_column(String(200), primary_key=True)
    nonce: Mapped[str] = mapped_column(String(64), primary_key=True)
    seen_at: Mapped[float] = mapped_column(Float, index=True)
    """Unix seconds on the accepting replica's clock."""


class JobState:
    """Where a diagnosis job stands (stored as plain strings)."""

    queued = "queued"
    running = "running"
    done = "done"
    failed = "failed"
    unfinished = (queued, running)


class JobRow(Base):
    """A diagnosis job of the API, in the store so that any replica sharing it can run it: a
    replica claims it for a lease it keeps renewing; a job whose lease ran out (its replica
    died) is claimed again by another."""

    __tablename__ = "jobs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    tenant: Mapped[str] = mapped_column(String(200), index=True)
    state: Mapped[str] = mapped_column(String(16), index=True)
    body: Mapped[bytes | None] = mapped_column(LargeBinary, deferred=True)
    """The request's body until the job ends (read only by the worker that claims it)."""
    size: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[float] = mapped_column(Float, index=True)
    """Unix seconds, every time here on the database's clock (replicas' clocks may differ)."""
    claimed_by: Mapped[str | None] = mapped_column(String(200))
    """The replica worker running it (host:pid:random), while it runs and after."""
    lease_until: Mapped[float | None] = mapped_column(Float)
    attempts: Mapped[int] = mapped_column(Integer)
    """How many times a replica claimed it."""
    finished_at: Mapped[float | None] = mapped_column(Float, index=True)
    failure_status: Mapped[int | None] = mapped_column(Integer)
    failure_detail: Mapped[str | None] = mapped_column(Text)


class BundleRow(Base):
    """A node's evidence bundle for one of a tenant's jobs, kept until the job is diagnosed
    from its nodes' bundles (any replica sharing the store can assemble them)."""

    __tablename__ = "bundles"

    tenant: Mapped[str] = mapped_column(String(200), primary_key=True)
    job: Mapped[str] = mapped_column(String(128), primary_key=True)
    node: Mapped[str] = mapped_column(String(128), primary_key=True)
    cluster: Mapped[str] = mapped_column(String(128))
    received_at: Mapped[float] = mapped_column(Float, index=True)
    body: Mapped[bytes] = mapped_column(LargeBinary, deferred=True)
    """The bundle as the node signed and sent it."""
