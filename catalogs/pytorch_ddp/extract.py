"""DistributedDataParallel's messages from the torch wheel's Python source.

The checkout is an unpacked torch wheel (the directory that holds `torch/`): what
`torch/nn/parallel/distributed.py` raises, logs at WARNING or above and warns, with the Join
context manager DDP's uneven-input support runs on and the DDP communication hooks. Most of DDP's
usage errors go through `self._log_and_throw(ValueError, "...")`, read like a raise. The C++
Reducer's texts (`Expected to have finished reduction ...`, `marked as ready twice`) are
libtorch's and stay in the pytorch_c10d catalog.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.core import Message
from catalogs.pysource import messages_under

EMITTER = "pytorch_ddp"
PATHS = [
    "torch/nn/parallel/distributed.py",
    "torch/distributed/algorithms/join.py",
    "torch/distributed/algorithms/ddp_comm_hooks",
]
THROWERS = {"_log_and_throw": (0, 1)}  # the helper -> positions of (exception type, message)


def extract(checkout: Path, release: str) -> list[Message]:
    return [
        Message(EMITTER, release, m.text, m.style, m.file, m.line, m.level, m.function)
        for m in messages_under(
            checkout, [p for p in PATHS if (checkout / p).exists()], throwers=THROWERS
        )
    ]
