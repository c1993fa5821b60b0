"""The exceptions denpex raises on purpose.

    DenpexError
    ├── InputError      input that cannot be used at all (the CLI exits 2 with one line)
    │   ├── InputTooLarge   past a size limit (unpacked bytes)
    │   └── InputTooSlow    past the time limit for reading it
    ├── RulesError      a signature library that does not load, compile or validate
    └── NotRecorded     a diagnosis was made but the incident store could not record it
                        (the CLI prints it and exits 3; the API answers 503)

Anything else escaping a stage is a bug in denpex, not in the input.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from denpex.models import Diagnosis


class DenpexError(Exception):
    """Base of every error denpex raises deliberately."""


class InputError(DenpexError):
    """The input cannot be used: missing path, unreadable file, nothing diagnosable."""


class InputTooLarge(InputError):
    """The input is past a size limit: an archive or compressed file unpacks to too much."""


class InputTooSlow(InputError):
    """Reading the input ran past the time limit a service set."""


class RulesError(DenpexError):
    """The signature library cannot be loaded, compiled or validated."""


class NotRecorded(DenpexError):
    """The diagnosis was made, but the incident store it was asked to go to refused it (after
    trying again where the refusal was momentary). The diagnosis is kept for the caller to
    show; nothing was written."""

    def __init__(self, message: str, diagnosis: Diagnosis) -> None:
        super().__init__(message)
        self.diagnosis = diagnosis
