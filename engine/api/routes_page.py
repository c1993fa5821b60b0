"""The paste-or-drop page `denpex serve` offers people (filled in below)."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(include_in_schema=False)
