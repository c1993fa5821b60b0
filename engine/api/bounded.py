"""Reading one request's inputs in a worker process whose memory is capped.

Consumes a request body, its reading bounds (`InputLimits`) and the memory cap
(`DENPEX_REQUEST_MEMORY_LIMIT`); produces the request's `Evidence`: the inputs read, matched and
assembled (the Flight Recorder dumps triaged) in a process of a pool, exactly as
`denpex.evidence.assemble` does in the server's own threads. Reading is where an input decides
how much memory a diagnosis takes (an archive's members, a dump's containers, a log's lines);
the reasoning over the evidence (the gate, the hybrid path, the store) stays in the server.

Each worker loads the signature library (from the cache), then limits its own address space
(`RLIMIT_AS`) to what it holds then plus the cap: an allocation past it fails, the request is
refused with `MemoryLimitExceeded` (413) and the pool is replaced (its workers finish what they
hold and exit, new ones start on demand), so the next request gets a fresh worker. A worker that
dies instead (the kernel's OOM killer, a crash in native code) fails the requests it held with
`WorkerStopped` (503) and the pool is replaced too. The server process itself is never capped.
The cap is on address space, not resident memory: Linux only (`resource`, `/proc`).
"""

from __future__ import annotations

import io
import multiprocessing
import os
import resource
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from pathlib import Path

from denpex.errors import DenpexError, InputTooLarge
from denpex.evidence import Evidence, EvidenceOptions, assemble
from denpex.hang.models import Scheduler
from denpex.hybrid.harvest import abnormal_lines
from denpex.ingest.sources import InputLimits
from denpex.match.scan import Matcher
from denpex.signatures.library import load_library

SETTING = "DENPEX_REQUEST_MEMORY_LIMIT"


class MemoryLimitExceeded(InputTooLarge):
    """Reading the request's inputs needed more memory than the per-request cap."""


class WorkerStopped(DenpexError):
    """The worker process reading the request's inputs died before it answered."""


@dataclass(frozen=True)
class LibrarySource:
    """Where a worker loads the signature library from (what the server loaded)."""

    rules_dir: Path | None
    cache_dir: Path | None
    overlay_dir: Path | None


@dataclass(frozen=True)
class Reading:
    """One request's reading, as a worker takes it."""

    source: LibrarySource
    rules_version: str
    """The label of the library the server diagnoses with; a worker holding another one (the
    overlay was promoted since it started) loads it again first."""
    limits: InputLimits
    abnormal: bool = True
    """Whether to gather the abnormal lines no signature explains (a diagnosis does)."""
    digests: bool = False
    world_size: int | None = None
    scheduler: Scheduler | None = None


# --- in the worker process ----------------------------------------------------------------------

_loaded: tuple[LibrarySource, Matcher] | None = None


def _vm_size() -> int:
    """This process's address space in bytes (`VmSize`)."""
    pages = Path("/proc/self/statm").read_text(encoding="ascii").split()[0]
    return int(pages) * os.sysconf("SC_PAGE_SIZE")


def start_worker(source: LibrarySource, cap: int) -> None:
    """Pool initializer: loads the library, then caps the address space at what it holds now
    plus `cap` bytes."""
    global _loaded
    _loaded = (source, _load(source))
    abnormal_lines("auto", source.cache_dir)
    limit = _vm_size() + cap
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _load(source: LibrarySource) -> Matcher:
    library = load_library(
        source.rules_dir, cache_dir=source.cache_dir, overlay_dir=source.overlay_dir
    )
    return Matcher(library, "auto", source.cache_dir)


def read_in_worker(body: bytes, reading: Reading) -> Evidence:
    """The evidence of `body` (runs in a worker process)."""
    global _loaded
    assert _loaded is not None, "start_worker did not run"
    try:
        source, matcher = _loaded
        if source != reading.source or matcher.library.label != reading.rules_version:
            matcher = _load(reading.source)
            _loaded = (reading.source, matcher)
        if matcher.library.label != reading.rules_version:
            raise DenpexError(
                f"the worker loaded signature library {matcher.library.label}, not "
                f"{reading.rules_version}; send it again"
            )
        options = EvidenceOptions(
            world_size=reading.world_size,
            scheduler=reading.scheduler,
            abnormal=abnormal_lines("auto", reading.source.cache_dir) if reading.abnormal else None,
            digests=reading.digests,
            limits=reading.limits,
        )
        evidence = assemble(["-"], matcher, options, stdin=io.BytesIO(body))
        return _without_dump_bytes(evidence)
    except MemoryError:
        raise MemoryLimitExceeded(_over_the_cap()) from None


def _without_dump_bytes(evidence: Evidence) -> Evidence:
    """The evidence without the dumps' raw bytes (up to `max_dump_bytes` each): they are
    triaged already and nothing after assembly reads them; `b""` still marks an input that was
    a dump."""
    if not evidence.dumps:
        return evidence
    return replace(
        evidence,
        inputs=tuple(s if s.dump is None else replace(s, dump=b"") for s in evidence.inputs),
        dumps=tuple(replace(d, data=b"") for d in evidence.dumps),
    )


def _over_the_cap() -> str:
    return f"reading the input needed more memory than one request may take (the {SETTING} limit)"


# --- in the server ------------------------------------------------------------------------------


class ReadingPool:
    """Worker processes that read requests' inputs, each under the memory cap."""

    def __init__(self, source: LibrarySource, cap: int, workers: int) -> None:
        self.source = source
        self.cap = cap
        self.workers = workers
        self._lock = threading.Lock()
        self._pool = self._new_pool()

    def _new_pool(self) -> ProcessPoolExecutor:
        # spawn, not fork: the server has threads (a fork copies their locks mid-use)
        return ProcessPoolExecutor(
            self.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=start_worker,
            initargs=(self.source, self.cap),
        )

    def read(self, body: bytes, reading: Reading) -> Evidence:
        """The evidence of `body`, read by a worker; this thread waits for it (callers are
        worker threads, never the event loop). Raises `MemoryLimitExceeded` past the cap,
        `WorkerStopped` when the worker died, and what reading raises (`InputError`, ...)."""
        with self._lock:
            pool = self._pool
            future = pool.submit(read_in_worker, body, reading)
        try:
            return future.result()
        except MemoryLimitExceeded:
            self._replace(pool)
            raise
        except MemoryError:  # the answer itself did not fit (pickled in the worker)
            self._replace(pool)
            raise MemoryLimitExceeded(_over_the_cap()) from None
        except BrokenProcessPool:
            self._replace(pool)
            raise WorkerStopped(
                "the worker process reading the input stopped before it answered (killed, or "
                "out of memory); it was replaced, send it again"
            ) from None

    def _replace(self, pool: ProcessPoolExecutor) -> None:
        """A new pool for the requests to come; the old one's workers finish what they hold."""
        with self._lock:
            if self._pool is not pool:
                return  # another request replaced it already
            self._pool = self._new_pool()
        pool.shutdown(wait=False)

    def close(self) -> None:
        """Stops the workers (waiting for a reading under way): a pool left to the
        interpreter's exit left its worker running, orphaned, under `denpex serve`."""
        with self._lock:
            pool = self._pool
        pool.shutdown(wait=True, cancel_futures=True)
