"""Curation's errors, in the project's one error tree."""

from __future__ import annotations

from denpex.errors import DenpexError


class CurationError(DenpexError):
    """A curation request cannot be carried out as asked (an unconfirmed incident, a draft
    that does not load, nothing distinctive to draft from)."""


class PromotionRefused(DenpexError):
    """The draft would harm the library; `reasons` says how, one line each."""

    def __init__(self, signature_id: str, reasons: list[str]) -> None:
        self.signature_id = signature_id
        self.reasons = reasons
        super().__init__(f"{signature_id} not promoted: " + "; ".join(reasons))
