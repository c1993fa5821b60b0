"""nodes' evidence bundles, kept per tenant and job until the job is diagnosed from them

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "bundles",
        sa.Column("tenant", sa.String(200), primary_key=True),
        sa.Column("job", sa.String(128), primary_key=True),
        sa.Column("node", sa.String(128), primary_key=True),
        sa.Column("cluster", sa.String(128), nullable=False),
        sa.Column("received_at", sa.Float, nullable=False),
        sa.Column("body", sa.LargeBinary, nullable=False),
    )
    op.create_index("ix_bundles_received_at", "bundles", ["received_at"])


def downgrade() -> None:
    op.drop_table("bundles")
