"""Stores under test: a SQLite file, and a throwaway schema in the local PostgreSQL."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from denpex.store.store import IncidentStore, open_store, store_url

POSTGRES_URL = os.environ.get(
    "DENPEX_TEST_POSTGRES_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432/test"
)


def _postgres_or_skip() -> None:
    probe = create_engine(POSTGRES_URL, connect_args={"connect_timeout": 3})
    try:
        with probe.connect():
            pass
    except OperationalError as error:
        reason = str(error.orig).strip().splitlines()[0] if error.orig else str(error)
        pytest.skip(f"PostgreSQL at {POSTGRES_URL} is unreachable: {reason}")
    finally:
        probe.dispose()


@pytest.fixture
def postgres_store() -> Iterator[IncidentStore]:
    _postgres_or_skip()
    schema = f"denpex_test_{uuid.uuid4().hex[:10]}"
    admin = create_engine(POSTGRES_URL)
    with admin.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    engine = create_engine(POSTGRES_URL, connect_args={"options": f"-csearch_path={schema}"})
    store = IncidentStore(engine)
    try:
        store.migrate()
        yield store
    finally:
        store.close()
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@contextmanager
def fresh_postgres_schema() -> Iterator[str]:
    """The URL of a new, empty schema in the local PostgreSQL, dropped afterwards."""
    _postgres_or_skip()
    schema = f"denpex_test_{uuid.uuid4().hex[:10]}"
    admin = create_engine(POSTGRES_URL)
    with admin.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        yield f"{POSTGRES_URL}?options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[IncidentStore]:
    store = open_store(store_url(str(tmp_path / "incidents.db")))
    yield store
    store.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest) -> IncidentStore:
    return request.getfixturevalue(f"{request.param}_store")
