"""curation outcomes: a curator's note on any action, and the signature that settled an incident

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("incidents") as batch:
        batch.add_column(sa.Column("curation_note", sa.Text))
        batch.add_column(sa.Column("settled_by", sa.String(200)))


def downgrade() -> None:
    with op.batch_alter_table("incidents") as batch:
        batch.drop_column("settled_by")
        batch.drop_column("curation_note")
