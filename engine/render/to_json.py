"""The diagnosis as JSON, exactly the contract's shape (docs/output-contract.md)."""

from __future__ import annotations

from denpex.models import Diagnosis


def render_json(diagnosis: Diagnosis) -> str:
    return diagnosis.model_dump_json(indent=2) + "\n"
