"""The incident store on SQLite and PostgreSQL: migrations, incidents, curation, labels."""

from __future__ import annotations

import hashlib
import stat
import time
from importlib import resources
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, inspect, text

from denpex.models import Status
from denpex.store.records import LabelSource
from denpex.store.schema import Base, CurationState
from denpex.store.store import (
    SCHEMA_HEAD,
    IncidentStore,
    StoreError,
    open_store,
    sqlite_path,
    store_url,
)
from tests.conftest import BAD_SAMPLE
from tests.hybrid.support import case_inputs, draft_of, observe


@pytest.fixture(scope="module")
def confident():
    return observe([str(BAD_SAMPLE)])


@pytest.fixture(scope="module")
def uncertain():
    # The same generic rule, asked for more confidence than it has: the rules are not sure.
    return observe(case_inputs("exc-keyerror"), threshold=0.7)


def test_opening_a_store_brings_its_schema_to_the_packaged_head(store: IncidentStore) -> None:
    tables = set(inspect(store.engine).get_table_names())
    assert {"incidents", "templates", "incident_templates", "request_nonces"} <= tables
    with store.engine.connect() as connection:
        context = MigrationContext.configure(connection)
        assert context.get_current_revision() == "0005"
        assert compare_metadata(context, Base.metadata) == []


def test_the_schema_head_the_store_checks_for_is_the_newest_packaged_migration() -> None:
    config = Config()
    config.set_main_option(
        "script_location", str(resources.files("denpex.store").joinpath("migrations"))
    )
    assert ScriptDirectory.from_config(config).get_heads() == [SCHEMA_HEAD]


def test_a_store_behind_the_packaged_head_is_migrated_when_opened(tmp_path: Path) -> None:
    url = store_url(str(tmp_path / "old.sqlite"))
    open_store(url).close()
    with create_engine(url).begin() as connection:
        connection.execute(text("DROP TABLE bundles"))
        connection.execute(text("UPDATE alembic_version SET version_num = '0004'"))
    reopened = open_store(url)
    assert "bundles" in set(inspect(reopened.engine).get_table_names())
    with reopened.engine.connect() as connection:
        assert MigrationContext.configure(connection).get_current_revision() == SCHEMA_HEAD


def test_an_incident_keeps_the_diagnosis_its_inputs_and_its_excerpt(store, confident) -> None:
    incident_id = store.add(draft_of(confident))
    incident = store.get(incident_id)
    assert incident.diagnosis == confident.diagnosis
    assert incident.status == "confident"
    assert incident.failure_class == confident.diagnosis.root_causes[0].failure_class
    assert incident.rules_version == confident.diagnosis.provenance.rules_version
    assert incident.excerpt == confident.excerpt
    assert incident.templates == confident.templates
    assert incident.curation_state == CurationState.not_queued
    assert incident.created_at.tzinfo is not None
    launcher = next(i for i in incident.inputs if i.source.endswith("launcher.log"))
    assert launcher.sha256 == hashlib.sha256(Path(launcher.source).read_bytes()).hexdigest()


def test_an_id_prefix_finds_an_incident_and_a_bad_id_says_why(store, confident) -> None:
    incident_id = store.add(draft_of(confident))
    assert store.get(incident_id[:8].upper()).id == incident_id
    with pytest.raises(StoreError, match="not an incident id"):
        store.get("abc")
    with pytest.raises(StoreError, match="no incident"):
        store.get("ffffffffffff")


def test_a_queued_incident_waits_until_a_curator_confirms_it(store, uncertain) -> None:
    incident_id = store.add(draft_of(uncertain, queue=True))
    assert [i.id for i in store.list_incidents(CurationState.queued)] == [incident_id]
    assert store.get(incident_id).label is None
    confirmed = store.confirm(incident_id, "python_exception", by="alice", note="KeyError")
    assert confirmed.curation_state == CurationState.confirmed
    assert confirmed.confirmed_by == "alice"
    assert confirmed.label is not None and confirmed.label.source is LabelSource.curator
    assert store.list_incidents(CurationState.queued) == []
    assert [i.id for i in store.list_incidents(CurationState.confirmed)] == [incident_id]


def test_only_taxonomy_classes_can_be_confirmed(store, uncertain) -> None:
    incident_id = store.add(draft_of(uncertain, queue=True))
    with pytest.raises(StoreError, match="not a failure class"):
        store.confirm(incident_id, "cosmic_rays")
    with pytest.raises(StoreError, match="not a failure class"):
        store.confirm(incident_id, "unknown")


def test_labels_come_from_curators_and_confident_rules_only(store, confident, uncertain) -> None:
    settled = store.add(draft_of(confident))
    waiting = store.add(draft_of(uncertain, queue=True))
    postings, labels = store.labelled_postings()
    assert set(labels) == {settled}
    assert labels[settled].source is LabelSource.rules
    assert all(waiting not in incidents for incidents in postings.values())
    store.confirm(waiting, "python_exception")
    _, labels = store.labelled_postings()
    assert labels[waiting].source is LabelSource.curator


def test_a_template_printed_by_many_incidents_is_stored_once(store, confident, uncertain) -> None:
    store.add(draft_of(confident))
    store.add(draft_of(uncertain, queue=True))
    texts = [text for _, text in store.templates()]
    assert len(texts) == len(set(texts))
    shared = set(confident.templates) & set(uncertain.templates)
    assert shared, "both torchrun failures print the launcher's failure summary"
    assert len(texts) == len(set(confident.templates) | set(uncertain.templates))


def test_reopening_a_store_keeps_its_incidents(tmp_path: Path, confident) -> None:
    url = store_url(str(tmp_path / "nested" / "incidents.db"))
    first = open_store(url)
    incident_id = first.add(draft_of(confident))
    first.close()
    again = open_store(url)
    assert again.get(incident_id).status == Status.confident.value
    assert again.count() == 1
    again.close()


def test_a_new_sqlite_store_is_readable_by_its_owner_only(tmp_path: Path, confident) -> None:
    path = tmp_path / "private" / "incidents.db"
    store = open_store(store_url(str(path)))
    store.add(draft_of(confident))
    store.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_a_plain_path_is_a_sqlite_file_and_urls_pass_through(tmp_path: Path) -> None:
    url = store_url(str(tmp_path / "x.db"))
    assert url.startswith("sqlite:///") and sqlite_path(url) == tmp_path / "x.db"
    assert store_url("postgresql://u@h/db") == "postgresql://u@h/db"
    assert sqlite_path("postgresql://u@h/db") is None


def test_an_unreachable_database_is_one_clear_error() -> None:
    with pytest.raises(StoreError, match="cannot open store postgresql") as raised:
        open_store("postgresql://denpex:secret@127.0.0.1:1/none?connect_timeout=2")
    assert "secret" not in str(raised.value)
    assert "Connection refused" in str(raised.value)


def test_an_unusable_url_is_one_clear_error() -> None:
    with pytest.raises(StoreError, match="cannot use store"):
        open_store("nosuchdialect://x/y")


@pytest.mark.postgres
def test_eight_processes_opening_a_fresh_postgres_schema_at_once_all_succeed(confident) -> None:
    from concurrent.futures import ProcessPoolExecutor

    from tests.store.conftest import fresh_postgres_schema

    with fresh_postgres_schema() as url:
        with ProcessPoolExecutor(max_workers=8) as pool:
            list(pool.map(_warm, range(8)))  # imports done, so the opens below coincide
            start = time.time() + 2
            outcomes = list(pool.map(_open, [url] * 8, [start] * 8))
        assert outcomes == ["ok"] * 8
        store = open_store(url)
        try:
            store.add(draft_of(confident))
            assert store.count() == 1
        finally:
            store.close()


def _warm(_: int) -> None:
    import denpex.store.store  # noqa: F401


def _open(url: str, start: float) -> str:
    time.sleep(max(0.0, start - time.time()))
    try:
        open_store(url).close()
    except StoreError as error:
        return str(error)
    return "ok"
