"""The store's refusal, with the diagnosis that was made: a `DenpexError` (see `denpex.errors`)."""

from __future__ import annotations

from denpex.errors import DenpexError
from denpex.models import Diagnosis


class NotRecorded(DenpexError):
    """The diagnosis was made, but the incident store it was asked to go to refused it (after
    trying again where the refusal was momentary). The diagnosis is kept for the caller to
    show; nothing was written."""

    def __init__(self, message: str, diagnosis: Diagnosis) -> None:
        super().__init__(message)
        self.diagnosis = diagnosis
