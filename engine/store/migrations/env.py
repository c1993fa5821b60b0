"""Alembic environment: runs the migrations on the connection the store hands over.

The store passes its open connection in `config.attributes["connection"]`; nothing here reads
a URL or a logging configuration. On PostgreSQL a transaction-scoped advisory lock serialises
replicas that open the same database at the same time.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import text

from denpex.store.schema import Base

MIGRATION_LOCK = 0x64656E70  # "denp": any constant shared by every denpex process

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    if connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
    context.run_migrations()
