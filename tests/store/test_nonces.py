"""Request nonces in the store: a nonce is accepted once per tenant, by any replica."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import create_engine, text

from denpex.store.nonces import StoreNonces
from denpex.store.store import IncidentStore, StoreError, open_store

WINDOW = 300.0
NOW = 1_764_600_000.0


def _replica(store: IncidentStore) -> IncidentStore:
    """Another process's handle on the same database: its own engine and connections."""
    url = store.engine.url
    if store.engine.dialect.name == "postgresql":
        with store.engine.connect() as connection:
            path = connection.execute(text("SHOW search_path")).scalar_one()
        engine = create_engine(url, connect_args={"options": f"-csearch_path={path}"})
    else:
        engine = create_engine(url)
    return IncidentStore(engine)


def test_a_nonce_is_accepted_once_per_tenant(store: IncidentStore) -> None:
    nonces = StoreNonces(store)
    assert nonces.first_use("acme", "n" * 22, NOW, WINDOW)
    assert not nonces.first_use("acme", "n" * 22, NOW + 1, WINDOW)
    assert nonces.first_use("globex", "n" * 22, NOW + 1, WINDOW)


def test_a_replica_sharing_the_store_refuses_a_nonce_another_accepted(
    store: IncidentStore,
) -> None:
    replica = _replica(store)
    try:
        assert StoreNonces(store).first_use("acme", "replayed-nonce-0001", NOW, WINDOW)
        assert not StoreNonces(replica).first_use("acme", "replayed-nonce-0001", NOW + 2, WINDOW)
    finally:
        replica.engine.dispose()


def test_of_eight_replicas_racing_one_nonce_exactly_one_wins(store: IncidentStore) -> None:
    replicas = [_replica(store) for _ in range(8)]
    try:
        with ThreadPoolExecutor(8) as pool:
            results = list(
                pool.map(
                    lambda r: StoreNonces(r).first_use("acme", "raced-nonce-000001", NOW, WINDOW),
                    replicas,
                )
            )
    finally:
        for replica in replicas:
            replica.engine.dispose()
    assert sorted(results) == [False] * 7 + [True]


def test_nonces_older_than_twice_the_window_are_forgotten(store: IncidentStore) -> None:
    nonces = StoreNonces(store)
    assert nonces.first_use("acme", "old-nonce-00000001", NOW, WINDOW)
    later = NOW + 2 * WINDOW + 1
    assert nonces.first_use("acme", "new-nonce-00000001", later, WINDOW)
    with store.engine.connect() as connection:
        kept = connection.execute(text("SELECT nonce FROM request_nonces")).scalars().all()
    assert kept == ["new-nonce-00000001"]


def test_a_store_that_cannot_answer_is_a_store_error_not_an_acceptance(tmp_path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'gone.db'}")
    with store.engine.begin() as connection:
        connection.execute(text("DROP TABLE request_nonces"))
    with pytest.raises(StoreError, match="cannot check the request's nonce"):
        StoreNonces(store).first_use("acme", "any-nonce-00000001", NOW, WINDOW)
    store.close()
