"""request nonces shared by API replicas; the tenant an incident came from

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "request_nonces",
        sa.Column("tenant", sa.String(200), primary_key=True),
        sa.Column("nonce", sa.String(64), primary_key=True),
        sa.Column("seen_at", sa.Float, nullable=False),
    )
    op.create_index("ix_request_nonces_seen_at", "request_nonces", ["seen_at"])
    with op.batch_alter_table("incidents") as batch:
        batch.add_column(sa.Column("tenant", sa.String(200)))
        batch.create_index("ix_incidents_tenant", ["tenant"])


def downgrade() -> None:
    with op.batch_alter_table("incidents") as batch:
        batch.drop_index("ix_incidents_tenant")
        batch.drop_column("tenant")
    op.drop_table("request_nonces")
