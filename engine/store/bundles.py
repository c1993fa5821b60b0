"""Nodes' evidence bundles in the incident store, shared by the API replicas.

Consumes an open `IncidentStore` and bundles as the nodes sent them (already checked by the
API); produces, per tenant and job, the nodes heard from and their bundles. A node that sends
again replaces its bundle. Bundles older than `KEEP_S` are deleted as new ones arrive.
"""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from denpex.store.jobs import database_now
from denpex.store.schema import BundleRow
from denpex.store.store import IncidentStore

KEEP_S = 7 * 24 * 3600.0


class StoreBundles:
    def __init__(self, store: IncidentStore) -> None:
        self.store = store

    def put(self, tenant: str, job: str, node: str, cluster: str, body: bytes) -> list[str]:
        """Keeps a node's bundle (replacing an earlier one); the job's nodes so far."""

        def keep(session: Session) -> list[str]:
            now = database_now(session)
            session.execute(delete(BundleRow).where(BundleRow.received_at < now - KEEP_S))
            session.execute(
                delete(BundleRow).where(
                    BundleRow.tenant == tenant, BundleRow.job == job, BundleRow.node == node
                )
            )
            session.add(
                BundleRow(
                    tenant=tenant, job=job, node=node, cluster=cluster, received_at=now, body=body
                )
            )
            session.flush()
            return self._nodes(session, tenant, job)

        return self.store.write(keep)

    def bodies(self, tenant: str, job: str) -> list[bytes]:
        def read(session: Session) -> list[bytes]:
            return list(
                session.scalars(
                    select(BundleRow.body)
                    .where(BundleRow.tenant == tenant, BundleRow.job == job)
                    .order_by(BundleRow.node)
                )
            )

        return self.store.write(read)

    def _nodes(self, session: Session, tenant: str, job: str) -> list[str]:
        return list(
            session.scalars(
                select(BundleRow.node)
                .where(BundleRow.tenant == tenant, BundleRow.job == job)
                .order_by(BundleRow.node)
            )
        )
