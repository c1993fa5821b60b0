"""Flight Recorder dumps on a stall, for Gloo, which has no watchdog to take them.

Consumes: the rank, an output directory, a shared request flag and a stall threshold. Produces:
`<out>/pickle/<prefix><rank>` (`_dump_fr_trace()`, with stack frames) and
`<out>/json/<prefix><rank>` (`_dump_fr_trace_json()`), once, when the training loop has not
reported progress for the threshold or a peer asked for dumps by touching the flag. The flag is
a file because every rank of these jobs shares one filesystem; a multi-host job would use the
store. A rank that is stopped or killed never dumps, exactly as in production.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path

from torch._C._distributed_c10d import _dump_fr_trace, _dump_fr_trace_json

DUMP_PREFIX = "fr_trace_rank_"
_POLL_S = 0.25


class StallDumper:
    def __init__(self, rank: int, out_dir: Path, request_flag: Path, stall_after_s: float) -> None:
        self._rank = rank
        self._out_dir = out_dir
        self._request_flag = request_flag
        self._stall_after_s = stall_after_s
        self._last_progress = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="fr-stall-dumper", daemon=True)

    def start(self) -> None:
        self.beat()
        self._thread.start()

    def beat(self) -> None:
        """The training loop made progress (a plain float store: atomic under the GIL)."""
        self._last_progress = time.monotonic()

    def stop(self) -> None:
        self._stop.set()

    def _watch(self) -> None:
        # The first dump that resolves stack frames imports torch._dynamo and takes seconds;
        # paying it now keeps the real dump fast when the job is about to be torn down.
        _dump_fr_trace()
        self.beat()
        while not self._stop.wait(_POLL_S):
            stalled = time.monotonic() - self._last_progress > self._stall_after_s
            if stalled or self._request_flag.exists():
                if stalled:
                    self._request_flag.touch()
                self._dump()
                return

    def _dump(self) -> None:
        for kind, payload in (("pickle", _dump_fr_trace()), ("json", _dump_fr_trace_json())):
            folder = self._out_dir / kind
            folder.mkdir(parents=True, exist_ok=True)
            target = folder / f"{DUMP_PREFIX}{self._rank}"
            partial = target.with_name(target.name + f".partial-{os.getpid()}")
            partial.write_bytes(payload)
            # A rank killed mid-write leaves only the partial file, never a truncated dump.
            with contextlib.suppress(OSError):
                partial.replace(target)
