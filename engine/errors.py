"""The exceptions denpex raises on purpose.

    DenpexError
    ├── InputError      input that cannot be used at all (the CLI exits 2 with one line)
    │   ├── InputTooLarge   past a size limit (unpacked bytes)
    │   │   └── MemoryLimitExceeded   reading one API request needed more memory than its
    │   │                   cap (denpex.api.bounded; 413)
    │   ├── InputTooSlow    past the time limit for reading it
    │   ├── DumpError, PickleRefused, PickleUnreadable   a Flight Recorder dump (denpex.hang)
    │   └── CodecError, BundleError   a node's evidence bundle (denpex.distributed)
    ├── RulesError      a signature library that does not load, compile or validate
    ├── StoreError      the incident store cannot be opened or written (denpex.store)
    ├── QueueFull       the store's job queue is full (denpex.store.jobs)
    ├── SealError       a job body key that cannot be one, or a queued body another key sealed
    │                   (denpex.store.sealing)
    ├── NotRecorded     a diagnosis was made but the incident store could not record it
    │                   (the CLI prints it and exits 3; the API answers 503); it carries the
    │                   diagnosis, so it lives above the models, in `denpex.store.errors`
    ├── AuthError       a request or bundle not signed by a known tenant (401)
    ├── NotAllowed      a tenant whose plan lacks the feature (403) (both in denpex.auth)
    ├── Busy            every API job slot is taken (denpex.api.jobs; 503, retry later)
    ├── WorkerStopped   the API's worker process reading a request died (denpex.api.bounded;
    │                   503, retry)
    ├── Problem     an HTTP answer with its own problem type and title, e.g. a job's error
    │                   re-raised for its status URL (denpex.api.service; also FastAPI's
    │                   HTTPException)
    ├── BrokerUnavailable   the Celery broker cannot be reached (denpex.distributed)
    ├── LLMUnavailable, PromptTooLarge, TokenizerError, AnswerError   the best effort's
    │                   model step (denpex.hybrid); each falls back to the retrieval answer
    ├── CurationError   a curation request that cannot be carried out as asked
    ├── PromotionRefused    a draft signature that would harm the library (both in
    │                   denpex.curation.errors)
    └── (subclasses live beside the code that raises them and are listed here)

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
