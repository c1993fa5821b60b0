"""The incident store: writes diagnoses, serves the curation queue and retrieval's labels.

Consumes a SQLAlchemy URL (or an engine built by the caller) and incident drafts; produces
incident ids, incidents, queue listings, curator confirmations, and the template postings the
similarity index is built from. Opening a store applies the packaged Alembic migrations, so a
new database is ready and an old one is brought up to date.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import os
import random
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Engine, create_engine, event, func, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session, selectinload

from denpex.errors import DenpexError
from denpex.models import Diagnosis
from denpex.store.records import (
    ExcerptLine,
    Incident,
    IncidentDraft,
    IncidentSummary,
    InputDigest,
    Label,
    label_of,
)
from denpex.store.schema import CurationState, IncidentRow, IncidentTemplateRow, TemplateRow
from denpex.taxonomy import is_failure_class

MIN_ID_PREFIX = 4
WRITE_ATTEMPTS = 6
"""Tries of one write that the database refused for a moment (a deadlock, a busy file)."""
_TRANSIENT_SQLSTATES = frozenset({"40P01", "40001", "55P03"})
"""PostgreSQL: deadlock detected, serialization failure, lock not available."""

T = TypeVar("T")


class StoreError(DenpexError):
    """The store cannot be opened, or a request names an incident or class it cannot use."""


def store_url(value: str) -> str:
    """A SQLAlchemy URL for `value`: URLs pass through, a plain path becomes a SQLite file."""
    if "://" in value:
        return value
    return f"sqlite:///{Path(value).expanduser().resolve()}"


def sqlite_path(url: str) -> Path | None:
    """The database file of a SQLite URL; None for other databases and in-memory SQLite."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database)


def _with_installed_driver(url: str) -> str:
    """`postgresql://` means psycopg 3 to SQLAlchemy 2.1; use psycopg2 when only it is here."""
    parsed = make_url(url)
    if parsed.drivername != "postgresql" or importlib.util.find_spec("psycopg") is not None:
        return url
    if importlib.util.find_spec("psycopg2") is None:
        return url
    return parsed.set(drivername="postgresql+psycopg2").render_as_string(hide_password=False)


def open_store(url: str) -> IncidentStore:
    """Connects to the database at `url`, migrating it to the packaged schema."""
    try:
        path = sqlite_path(url)
        if path is not None:
            _create_private(path)
        engine = create_engine(_with_installed_driver(url), pool_pre_ping=True)
    except (ArgumentError, ValueError, OSError) as error:
        raise StoreError(f"cannot use store {_safe(url)}: {error}") from None
    except ImportError as error:
        raise StoreError(f"store {_safe(url)} needs a database driver: {error}") from None
    store = IncidentStore(engine)
    store.migrate()
    return store


def _create_private(path: Path) -> None:
    """Creates the SQLite file (and its folder) readable by its owner only: incidents hold log
    lines. SQLite's journal and WAL files take the database file's mode."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    descriptor = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    os.close(descriptor)


def _safe(url: str) -> str:
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparseable URL>"


def _configure_sqlite(engine: Engine) -> None:
    """Foreign keys on, and `secure_delete` on: what is deleted or overwritten (a job's raw body
    once the job ends) is overwritten in the file too, not left in its freed pages. Some SQLite
    builds have it on by default (Debian's), others do not; this does not depend on the build."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA secure_delete=ON")
        cursor.close()


def _aware(moment: datetime | None) -> datetime | None:
    """SQLite returns naive datetimes; every time the store hands out is UTC-aware."""
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=UTC)


def combined_digest(inputs: Iterable[InputDigest]) -> str:
    """One digest for a set of inputs, independent of the order they were given in."""
    hasher = hashlib.sha256()
    for item in sorted(inputs, key=lambda i: (i.source, i.sha256 or "")):
        hasher.update(f"{item.source}\0{item.sha256 or '-'}\n".encode())
    return hasher.hexdigest()


_MIGRATION_LOCK = 0x64656E706578  # "denpex": one advisory lock id for schema migrations

SCHEMA_HEAD = "0005"
"""The revision of the newest packaged migration (`migrations/versions/`); a test holds it to
Alembic's own reading of the scripts, so a new migration cannot be added without it."""


class IncidentStore:
    """All reads and writes of incidents. One instance per process and database."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        if engine.dialect.name == "sqlite":
            _configure_sqlite(engine)

    @property
    def url(self) -> str:
        return self.engine.url.render_as_string(hide_password=True)

    def migrate(self) -> None:
        """Brings the schema to the packaged head. A database already there is told by one
        read of Alembic's version table, without loading Alembic and its scripts (a third of
        a second of every start)."""
        if self._at_head():
            return
        from alembic import command
        from alembic.config import Config

        config = Config()
        config.set_main_option(
            "script_location", str(resources.files("denpex.store").joinpath("migrations"))
        )
        try:
            with _sqlite_migration_lock(self.engine), self.engine.begin() as connection:
                if connection.dialect.name == "postgresql":
                    # Replicas and processes opening a fresh database at once take turns:
                    # concurrent CREATE TABLEs deadlock. The lock ends with the transaction.
                    connection.execute(
                        text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK}
                    )
                config.attributes["connection"] = connection
                command.upgrade(config, "head")
        except SQLAlchemyError as error:
            raise StoreError(f"cannot open store {self.url}: {_first_line(error)}") from None

    def _at_head(self) -> bool:
        """Whether Alembic's version table names exactly the packaged head; any doubt (no
        table, no database yet, another revision) is left to the migration."""
        try:
            with self.engine.connect() as connection:
                rows = connection.execute(text("SELECT version_num FROM alembic_version")).all()
        except SQLAlchemyError:
            return False
        return [tuple(row) for row in rows] == [(SCHEMA_HEAD,)]

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def _session(self) -> Iterator[Session]:
        try:
            with Session(self.engine, expire_on_commit=False) as session, session.begin():
                yield session
        except StoreError:
            raise
        except SQLAlchemyError as error:
            raise StoreError(f"store {self.url}: {_first_line(error)}") from None

    def write(self, work: Callable[[Session], T]) -> T:
        """`work` in one transaction, tried again while the database refuses it for a moment
        (PostgreSQL's deadlock detector chose it, another process holds SQLite's file): such a
        refusal rolls the whole transaction back, so running it again writes it once. Raises
        StoreError when it still cannot be written."""
        for attempt in range(WRITE_ATTEMPTS):
            try:
                with Session(self.engine, expire_on_commit=False) as session, session.begin():
                    return work(session)
            except StoreError:
                raise
            except SQLAlchemyError as error:
                if attempt + 1 < WRITE_ATTEMPTS and is_transient(error):
                    time.sleep(random.uniform(0.5, 1.0) * 0.05 * 2**attempt)
                    continue
                raise StoreError(f"store {self.url}: {_first_line(error)}") from None
        raise AssertionError("unreachable")  # the last attempt returned or raised

    # writing -------------------------------------------------------------------------------

    def add(self, draft: IncidentDraft, *, incident_id: str | None = None) -> str:
        """Stores one diagnosis; returns its incident id (the curation id when queued).

        The caller may choose the id (32 hex digits) so it can be quoted before it is stored."""
        incident_id = incident_id or uuid.uuid4().hex

        def insert(session: Session) -> str:
            if session.get(IncidentRow, incident_id) is not None:
                # Written by an earlier try of the same work (a job taken over from a replica
                # that recorded it and died before saying so): the first record stands.
                return incident_id
            template_ids = self._template_ids(session, draft.templates)
            session.add(_new_row(incident_id, draft, template_ids))
            return incident_id

        try:
            return self.write(insert)
        except StoreError as refused:
            if self._recorded(incident_id):
                return incident_id  # another process recorded the same work at the same moment
            raise refused from None

    def add_confirmed(
        self, incidents: Sequence[tuple[str, IncidentDraft, str, str | None]], *, by: str | None
    ) -> int:
        """Stores diagnoses with their confirmed causes, (incident id, draft, class, note) each,
        in one transaction, leaving out the ids the store holds; how many it added. A history
        of hundreds (the seed) is one commit, where `add` and `confirm` make two each."""
        for _, _, failure_class, _ in incidents:
            _check_confirmable(failure_class)

        def insert(session: Session) -> int:
            wanted = [incident_id for incident_id, _, _, _ in incidents]
            held: set[str] = set()
            for start in range(0, len(wanted), 500):  # under any database's bound on parameters
                chunk = wanted[start : start + 500]
                held.update(
                    session.scalars(select(IncidentRow.id).where(IncidentRow.id.in_(chunk)))
                )
            fresh = [entry for entry in incidents if entry[0] not in held]
            template_id = _bulk_template_ids(
                session, [t for _, draft, _, _ in fresh for t in draft.templates]
            )
            now = datetime.now(UTC)
            for incident_id, draft, failure_class, note in fresh:
                row = _new_row(incident_id, draft, [template_id[t] for t in draft.templates])
                row.confirmed_class = failure_class
                row.confirmed_by = by
                row.confirmed_note = note
                row.confirmed_at = now
                row.curation_state = CurationState.confirmed
                session.add(row)
            return len(fresh)

        return self.write(insert)

    def _recorded(self, incident_id: str) -> bool:
        try:
            return self.exists(incident_id)
        except StoreError:
            return False

    def exists(self, incident_id: str) -> bool:
        """Whether an incident has exactly this id."""
        with self._session() as session:
            return session.get(IncidentRow, incident_id) is not None

    def _template_ids(self, session: Session, texts: list[str]) -> list[int]:
        """The ids of `texts`, adding those not stored yet. New templates are inserted in digest
        order: writers that share templates then wait for one another in the same order instead
        of each holding one the other needs (a deadlock)."""
        ids = {text: self._template_id(session, text) for text in sorted(set(texts), key=_digest)}
        return [ids[text] for text in texts]

    def _template_id(self, session: Session, text: str) -> int:
        digest = _digest(text)
        existing = session.scalar(select(TemplateRow.id).where(TemplateRow.digest == digest))
        if existing is not None:
            return existing
        try:
            with session.begin_nested():  # another writer may insert the same template
                row = TemplateRow(digest=digest, text=text)
                session.add(row)
            return row.id
        except IntegrityError:
            found = session.scalar(select(TemplateRow.id).where(TemplateRow.digest == digest))
            if found is None:
                raise
            return found

    def confirm(
        self,
        incident_id: str,
        failure_class: str,
        *,
        by: str | None = None,
        note: str | None = None,
    ) -> Incident:
        """Records a curator's cause for an incident; it feeds retrieval from now on."""
        _check_confirmable(failure_class)

        def update(session: Session) -> Incident:
            row = self._row(session, incident_id)
            row.confirmed_class = failure_class
            row.confirmed_by = by
            row.confirmed_note = note
            row.confirmed_at = datetime.now(UTC)
            row.curation_state = CurationState.confirmed
            session.flush()
            return _incident(row)

        return self.write(update)

    def reject(
        self, incident_id: str, *, by: str | None = None, note: str | None = None
    ) -> Incident:
        """Takes a queued incident off the queue without a cause (a test job, a duplicate)."""

        def update(session: Session) -> Incident:
            row = self._row(session, incident_id)
            if row.curation_state == CurationState.confirmed:
                raise StoreError(
                    f"incident {row.id[:12]} is confirmed as {row.confirmed_class}; "
                    "a confirmed cause is not rejected"
                )
            row.curation_state = CurationState.rejected
            row.curation_note = f"rejected by {by or 'unknown'}" + (f": {note}" if note else "")
            session.flush()
            return _incident(row)

        return self.write(update)

    def settle(self, incident_id: str, diagnosis: Diagnosis, signature_id: str) -> Incident:
        """Records a queued incident's new diagnosis after a promotion; a confident one takes it
        off the queue as resolved by `signature_id`."""
        top = diagnosis.root_causes[0] if diagnosis.root_causes else None

        def update(session: Session) -> Incident:
            row = self._row(session, incident_id)
            row.diagnosis = diagnosis.model_dump(mode="json")
            row.status = diagnosis.status.value
            row.summary = diagnosis.summary
            row.failure_class = top.failure_class if top else None
            row.answer_source = top.source.value if top else None
            row.confidence = top.confidence if top else None
            row.rules_version = diagnosis.provenance.rules_version
            if diagnosis.status.value == "confident" and row.curation_state in (
                CurationState.queued,
                CurationState.not_queued,
            ):
                row.curation_state = CurationState.resolved
                row.settled_by = signature_id
                row.curation_note = f"settled by promoted signature {signature_id}"
            session.flush()
            return _incident(row)

        return self.write(update)

    # reading -------------------------------------------------------------------------------

    def in_state(self, states: Iterable[str], limit: int = 10_000) -> list[Incident]:
        """Every incident in these curation states (all when `states` is empty), oldest first."""
        wanted = list(states)
        query = (
            select(IncidentRow)
            .order_by(IncidentRow.created_at, IncidentRow.id)
            .limit(limit)
            .options(selectinload(IncidentRow.lines).selectinload(IncidentTemplateRow.template))
        )
        if wanted:
            query = query.where(IncidentRow.curation_state.in_(wanted))
        with self._session() as session:
            return [_incident(row) for row in session.scalars(query)]

    def sharing_templates(
        self, templates: Iterable[str], exclude: Iterable[str] = (), limit: int = 10
    ) -> list[tuple[Incident, int]]:
        """Incidents outside `exclude` that printed any of `templates`, with how many of them,
        most shared first (newest first among equals)."""
        digests = [hashlib.sha256(t.encode()).hexdigest() for t in dict.fromkeys(templates)]
        if not digests:
            return []
        skip = set(exclude)
        query = (
            select(IncidentTemplateRow.incident_id, func.count(IncidentTemplateRow.template_id))
            .join(TemplateRow, TemplateRow.id == IncidentTemplateRow.template_id)
            .where(TemplateRow.digest.in_(digests))
            .group_by(IncidentTemplateRow.incident_id)
        )
        with self._session() as session:
            counts = {
                incident_id: shared
                for incident_id, shared in session.execute(query)
                if incident_id not in skip
            }
        found = self.incidents(counts)
        found.sort(key=lambda i: (-counts[i.id], -i.created_at.timestamp()))
        return [(incident, counts[incident.id]) for incident in found[:limit]]

    def get(self, incident_id: str) -> Incident:
        """The incident with this id, or with this unique id prefix of 4+ characters."""
        with self._session() as session:
            return _incident(self._row(session, incident_id))

    def _row(self, session: Session, incident_id: str) -> IncidentRow:
        wanted = incident_id.strip().lower()
        if len(wanted) < MIN_ID_PREFIX or not all(c in "0123456789abcdef" for c in wanted):
            raise StoreError(f"{incident_id!r} is not an incident id")
        rows = session.scalars(
            select(IncidentRow)
            .where(IncidentRow.id.startswith(wanted, autoescape=True))
            .options(selectinload(IncidentRow.lines).selectinload(IncidentTemplateRow.template))
            .limit(2)
        ).all()
        if not rows:
            raise StoreError(f"no incident {incident_id!r} in {self.url}")
        if len(rows) > 1:
            raise StoreError(f"incident id {incident_id!r} is ambiguous; give more characters")
        return rows[0]

    def list_incidents(
        self, state: str | None = CurationState.queued, limit: int = 50
    ) -> list[IncidentSummary]:
        """The newest incidents first, in one curation state or (None) all of them."""
        if state is not None and state not in CurationState.all:
            raise StoreError(f"unknown curation state {state!r}; use one of {CurationState.all}")
        query = select(IncidentRow).order_by(IncidentRow.created_at.desc()).limit(limit)
        if state is not None:
            query = query.where(IncidentRow.curation_state == state)
        with self._session() as session:
            return [
                IncidentSummary(
                    id=row.id,
                    created_at=_aware(row.created_at) or row.created_at,
                    status=row.status,
                    failure_class=row.failure_class,
                    confidence=row.confidence,
                    curation_state=row.curation_state,
                    confirmed_class=row.confirmed_class,
                    summary=row.summary,
                )
                for row in session.scalars(query)
            ]

    def count(self) -> int:
        with self._session() as session:
            return session.scalar(select(func.count()).select_from(IncidentRow)) or 0

    def templates(self, exclude: Iterable[int] = ()) -> list[tuple[int, str]]:
        """Every stored template (id, text) whose id is not in `exclude`."""
        skip = set(exclude)
        with self._session() as session:
            rows = session.execute(select(TemplateRow.id, TemplateRow.text)).all()
        return [(row.id, row.text) for row in rows if row.id not in skip]

    def template_ids(self) -> set[int]:
        with self._session() as session:
            return set(session.scalars(select(TemplateRow.id)))

    def labelled_postings(self) -> tuple[dict[int, list[str]], dict[str, Label]]:
        """For every template, the labelled incidents that printed it; and those labels, oldest
        incident first."""
        query = (
            select(
                IncidentTemplateRow.template_id,
                IncidentRow.id,
                IncidentRow.confirmed_class,
                IncidentRow.status,
                IncidentRow.failure_class,
            )
            .join(IncidentRow, IncidentRow.id == IncidentTemplateRow.incident_id)
            .where((IncidentRow.confirmed_class.is_not(None)) | (IncidentRow.status == "confident"))
            .order_by(IncidentRow.created_at, IncidentRow.id, IncidentTemplateRow.position)
        )
        postings: dict[int, list[str]] = {}
        labels: dict[str, Label] = {}
        with self._session() as session:
            for template_id, incident_id, confirmed, status, failure_class in session.execute(
                query
            ):
                label = label_of(confirmed, status, failure_class)
                if label is None:
                    continue
                labels[incident_id] = label
                postings.setdefault(template_id, []).append(incident_id)
        return postings, labels

    def incidents(self, ids: Iterable[str]) -> list[Incident]:
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return []
        with self._session() as session:
            rows = session.scalars(
                select(IncidentRow)
                .where(IncidentRow.id.in_(wanted))
                .options(selectinload(IncidentRow.lines).selectinload(IncidentTemplateRow.template))
            ).all()
            by_id = {row.id: _incident(row) for row in rows}
        return [by_id[i] for i in wanted if i in by_id]


def _bulk_template_ids(session: Session, texts: list[str]) -> dict[str, int]:
    """The id of each of `texts`, adding those not stored yet in the one digest order writers
    share (`IncidentStore._template_ids`), in the caller's transaction and without a savepoint
    each: SQLite commits a savepoint opened outside a transaction to disk, a sync per template.
    A writer that adds one of them meanwhile makes this transaction fail, for the caller to
    run again."""
    by_digest = {_digest(text): text for text in texts}
    digests = sorted(by_digest)
    found: dict[str, int] = {}
    for start in range(0, len(digests), 500):  # under any database's bound on parameters
        chunk = digests[start : start + 500]
        query = select(TemplateRow.digest, TemplateRow.id).where(TemplateRow.digest.in_(chunk))
        found.update((digest, template_id) for digest, template_id in session.execute(query))
    added = [TemplateRow(digest=d, text=by_digest[d]) for d in digests if d not in found]
    session.add_all(added)
    session.flush()
    found.update((row.digest, row.id) for row in added)
    return {by_digest[digest]: found[digest] for digest in digests}


def _check_confirmable(failure_class: str) -> None:
    if not is_failure_class(failure_class) or failure_class == "unknown":
        raise StoreError(f"{failure_class!r} is not a failure class a curator can confirm")


def _new_row(incident_id: str, draft: IncidentDraft, template_ids: list[int]) -> IncidentRow:
    """The row of a diagnosis not stored yet, its lines pointing at `template_ids`."""
    diagnosis = draft.diagnosis
    top = diagnosis.root_causes[0] if diagnosis.root_causes else None
    row = IncidentRow(
        id=incident_id,
        created_at=datetime.now(UTC),
        status=diagnosis.status.value,
        summary=diagnosis.summary,
        failure_class=top.failure_class if top else None,
        answer_source=top.source.value if top else None,
        confidence=top.confidence if top else None,
        input_digest=combined_digest(draft.inputs),
        inputs=[i.model_dump(mode="json") for i in draft.inputs],
        excerpt=[line.model_dump(mode="json") for line in draft.excerpt],
        diagnosis=diagnosis.model_dump(mode="json"),
        denpex_version=diagnosis.provenance.denpex_version,
        rules_version=diagnosis.provenance.rules_version,
        llm_model=diagnosis.provenance.model,
        embedder=draft.embedder,
        elapsed_ms=diagnosis.provenance.elapsed_ms,
        curation_state=CurationState.queued if draft.queue else CurationState.not_queued,
        tenant=draft.tenant,
    )
    row.lines = [
        IncidentTemplateRow(position=position, template_id=template_id)
        for position, template_id in enumerate(template_ids)
    ]
    return row


def _incident(row: IncidentRow) -> Incident:
    return Incident(
        id=row.id,
        created_at=_aware(row.created_at) or row.created_at,
        status=row.status,
        summary=row.summary,
        failure_class=row.failure_class,
        answer_source=row.answer_source,
        confidence=row.confidence,
        input_digest=row.input_digest,
        inputs=[InputDigest.model_validate(i) for i in row.inputs],
        excerpt=[ExcerptLine.model_validate(line) for line in row.excerpt],
        templates=[line.template.text for line in row.lines],
        diagnosis=Diagnosis.model_validate(row.diagnosis),
        denpex_version=row.denpex_version,
        rules_version=row.rules_version,
        llm_model=row.llm_model,
        embedder=row.embedder,
        elapsed_ms=row.elapsed_ms,
        curation_state=row.curation_state,
        confirmed_class=row.confirmed_class,
        confirmed_by=row.confirmed_by,
        confirmed_at=_aware(row.confirmed_at),
        confirmed_note=row.confirmed_note,
        curation_note=row.curation_note,
        settled_by=row.settled_by,
        tenant=row.tenant,
    )


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def is_transient(error: SQLAlchemyError) -> bool:
    """Whether the database refused a transaction for a moment, so trying again can succeed."""
    if not isinstance(error, DBAPIError):
        return False
    original = error.orig
    code = getattr(original, "pgcode", None) or getattr(original, "sqlstate", None)
    if code in _TRANSIENT_SQLSTATES:
        return True
    return "database is locked" in str(original)


@contextmanager
def _sqlite_migration_lock(engine: Engine) -> Iterator[None]:
    """On a SQLite file, processes migrating it at once take turns (the first creates the
    tables, the others find them): an exclusive lock on a file beside the database, held while
    migrating. PostgreSQL takes an advisory lock inside the migration's transaction instead."""
    database = engine.url.database if engine.dialect.name == "sqlite" else None
    if not database or database == ":memory:":
        yield
        return
    descriptor = os.open(f"{database}.migrate-lock", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # closing releases the lock


def _first_line(error: Exception) -> str:
    text = str(getattr(error, "orig", None) or error).strip()
    return text.splitlines()[0] if text else type(error).__name__
