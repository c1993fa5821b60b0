"""Many processes recording their first diagnoses into one new store at the same moment.

A platform's jobs fail together (a switch goes down, every job on it dies), so the first
diagnoses of a fresh store arrive at once: each process migrates the empty schema and records
incidents whose templates overlap the others'. Every one must be recorded, once.
"""

from __future__ import annotations

import random
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from denpex.store.records import IncidentDraft
from denpex.store.store import StoreError, open_store, store_url
from tests.conftest import BAD_SAMPLE
from tests.hybrid.support import case_inputs, draft_of, observe
from tests.store.conftest import fresh_postgres_schema

PROCESSES = 8
INCIDENTS_EACH = 6


@pytest.fixture(scope="module")
def drafts() -> list[str]:
    """Real diagnoses of different failures, as JSON (what a process is handed)."""
    cases = [[str(BAD_SAMPLE)], case_inputs("exc-keyerror"), case_inputs("killed-rank1")]
    return [draft_of(observe(paths)).model_dump_json() for paths in cases]


def _warm(_: int) -> None:
    import denpex.store.store  # noqa: F401


def _record_at(url: str, start: float, drafts: list[str], seed: int) -> list[str] | str:
    """Opens the store at `start` and records every draft, each with all the drafts' templates
    in its own order (jobs print the same lines in different orders)."""
    shuffler = random.Random(seed)
    parsed = [IncidentDraft.model_validate_json(d) for d in drafts]
    shared = sorted({t for d in parsed for t in d.templates})
    time.sleep(max(0.0, start - time.time()))
    try:
        store = open_store(url)
        recorded = []
        for number in range(INCIDENTS_EACH):
            templates = shuffler.sample(shared, len(shared))
            draft = parsed[number % len(parsed)].model_copy(update={"templates": templates})
            recorded.append(store.add(draft))
        store.close()
    except StoreError as error:
        return str(error)
    return recorded


def _record_from_many_processes_at_once(url: str, drafts: list[str]) -> list[str]:
    with ProcessPoolExecutor(max_workers=PROCESSES) as pool:
        list(pool.map(_warm, range(PROCESSES)))  # imports done, so the opens below coincide
        start = time.time() + 2
        outcomes = list(
            pool.map(
                _record_at,
                [url] * PROCESSES,
                [start] * PROCESSES,
                [drafts] * PROCESSES,
                range(PROCESSES),
            )
        )
    failures = [o for o in outcomes if isinstance(o, str)]
    assert failures == []
    return [incident_id for ids in outcomes for incident_id in ids]


def _assert_each_recorded_once(url: str, ids: list[str], drafts: list[str]) -> None:
    store = open_store(url)
    try:
        assert len(set(ids)) == PROCESSES * INCIDENTS_EACH
        assert store.count() == PROCESSES * INCIDENTS_EACH
        assert {i.id for i in store.incidents(ids)} == set(ids)
        templates = {t for d in drafts for t in IncidentDraft.model_validate_json(d).templates}
        assert sorted(text for _, text in store.templates()) == sorted(templates)
    finally:
        store.close()


@pytest.mark.postgres
def test_eight_processes_recording_first_diagnoses_in_a_fresh_postgres_schema_all_record(
    drafts: list[str],
) -> None:
    with fresh_postgres_schema() as url:
        ids = _record_from_many_processes_at_once(url, drafts)
        _assert_each_recorded_once(url, ids, drafts)


def test_eight_processes_recording_first_diagnoses_in_a_new_sqlite_file_all_record(
    tmp_path: Path, drafts: list[str]
) -> None:
    url = store_url(str(tmp_path / "incidents.sqlite"))
    ids = _record_from_many_processes_at_once(url, drafts)
    _assert_each_recorded_once(url, ids, drafts)
