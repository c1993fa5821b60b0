"""Request nonces remembered in the incident store, so the replay check holds across replicas.

Consumes an open `IncidentStore` (SQLite or PostgreSQL); produces `first_use`, the API's
`NonceLedger`: a nonce is accepted once per tenant within the freshness window. The primary key
(tenant, nonce) decides between two replicas that see the same replayed request at once: the
database admits one insert, the other replica gets an integrity error and refuses the request.
Nonces older than twice the window are deleted as new ones arrive (a request that old is
refused by its timestamp before its nonce is looked at).
"""

from __future__ import annotations

from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session

from denpex.store.schema import NonceRow
from denpex.store.store import IncidentStore, StoreError


class StoreNonces:
    """The `NonceLedger` of every replica that shares `store`."""

    def __init__(self, store: IncidentStore) -> None:
        self.store = store

    def first_use(self, tenant: str, nonce: str, now: float, window_s: float) -> bool:
        """True when no replica has accepted this tenant's nonce within the window; records it.
        Raises StoreError when the store cannot answer (the request cannot be checked)."""
        try:
            with Session(self.store.engine) as session:
                with session.begin():
                    session.execute(delete(NonceRow).where(NonceRow.seen_at < now - 2 * window_s))
                try:
                    with session.begin():
                        session.add(NonceRow(tenant=tenant, nonce=nonce, seen_at=now))
                except IntegrityError:
                    return False
        except SQLAlchemyError as error:
            first = str(getattr(error, "orig", None) or error).strip().splitlines()
            raise StoreError(
                f"store {self.store.url}: cannot check the request's nonce "
                f"({first[0] if first else type(error).__name__})"
            ) from None
        return True
