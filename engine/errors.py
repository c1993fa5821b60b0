"""The exceptions denpex raises on purpose.

    DenpexError
    ├── InputError      input that cannot be used at all (the CLI exits 2 with one line)
    │   ├── InputTooLarge   past a size limit (unpacked bytes)
    │   └── InputTooSlow    past the time limit for reading it
    ├── RulesError      a signature library that does not load, compile or validate
    └── NotRecorded     a diagnosis was made but the incident store could not record it
                        (the CLI prints it and exits 3; the API answers 503); it carries the
                        diagnosis, so it lives above the models, in `denpex.store.errors`

Anything else escaping a stage is a bug in denpex, not in the input.
"""

from __future__ import annotations


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
