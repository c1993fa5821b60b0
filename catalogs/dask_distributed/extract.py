"""Dask distributed's failure messages (the `distributed` package), from the source of a pinned
release (see source.yaml).

Scope: the scheduler, worker, nanny and their memory managers (worker_memory.py, spill.py,
diskutils.py), the worker state machine, the comms (distributed/comm/), core.py (RPC, connection
pool), the client, P2P shuffle (distributed/shuffle/), cluster deployment (distributed/deploy/,
process.py) and the CLI. Raises, logger errors/warnings/critical/exception calls and warnings;
the dashboard, diagnostics, HTTP routes, test utilities and tests are out of scope. INFO lines
(the nanny's "Worker process %d was killed by signal %d") are read by hand-written signatures
in rules/dask.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.python_messages import extract_python

EMITTER = "dask_distributed"
INCLUDE = (
    "distributed/scheduler.py",
    "distributed/worker.py",
    "distributed/nanny.py",
    "distributed/worker_memory.py",
    "distributed/worker_state_machine.py",
    "distributed/spill.py",
    "distributed/diskutils.py",
    "distributed/core.py",
    "distributed/client.py",
    "distributed/batched.py",
    "distributed/utils_comm.py",
    "distributed/process.py",
    "distributed/preloading.py",
    "distributed/comm/",
    "distributed/shuffle/",
    "distributed/deploy/",
    "distributed/cli/",
)
EXCLUDE = ("distributed/utils_test.py", "distributed/deploy/old_ssh.py")


def extract(checkout: Path, release: str) -> list:
    return extract_python(checkout, release, EMITTER, INCLUDE, EXCLUDE)
