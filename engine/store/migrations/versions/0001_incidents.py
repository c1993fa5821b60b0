"""incidents, templates and their links

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "incidents",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("summary", sa.Text, nullable=False),
        sa.Column("failure_class", sa.String(64)),
        sa.Column("answer_source", sa.String(16)),
        sa.Column("confidence", sa.Float),
        sa.Column("input_digest", sa.String(64), nullable=False),
        sa.Column("inputs", sa.JSON, nullable=False),
        sa.Column("excerpt", sa.JSON, nullable=False),
        sa.Column("diagnosis", sa.JSON, nullable=False),
        sa.Column("denpex_version", sa.String(64), nullable=False),
        sa.Column("rules_version", sa.String(64), nullable=False),
        sa.Column("llm_model", sa.String(200)),
        sa.Column("embedder", sa.String(200)),
        sa.Column("elapsed_ms", sa.Integer, nullable=False),
        sa.Column("curation_state", sa.String(16), nullable=False),
        sa.Column("confirmed_class", sa.String(64)),
        sa.Column("confirmed_by", sa.String(200)),
        sa.Column("confirmed_at", sa.DateTime(timezone=True)),
        sa.Column("confirmed_note", sa.Text),
    )
    op.create_index("ix_incidents_created_at", "incidents", ["created_at"])
    op.create_index("ix_incidents_input_digest", "incidents", ["input_digest"])
    op.create_index("ix_incidents_curation_state", "incidents", ["curation_state"])
    op.create_table(
        "templates",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("digest", sa.String(64), nullable=False, unique=True),
        sa.Column("text", sa.Text, nullable=False),
    )
    op.create_table(
        "incident_templates",
        sa.Column(
            "incident_id",
            sa.String(32),
            sa.ForeignKey("incidents.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("position", sa.Integer, primary_key=True),
        sa.Column("template_id", sa.Integer, sa.ForeignKey("templates.id"), nullable=False),
    )
    op.create_index("ix_incident_templates_template_id", "incident_templates", ["template_id"])


def downgrade() -> None:
    op.drop_table("incident_templates")
    op.drop_table("templates")
    op.drop_table("incidents")
