"""Distributed checkpoint (torch.distributed.checkpoint) messages from the torch wheel's Python
source.

The checkout is an unpacked torch wheel (the directory that holds `torch/`): what it raises,
logs at WARNING or above, and warns.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.core import Message
from catalogs.pysource import messages_under

EMITTER = "pytorch_dcp"
PATHS = ["torch/distributed/checkpoint"]


def extract(checkout: Path, release: str) -> list[Message]:
    return [
        Message(EMITTER, release, m.text, m.style, m.file, m.line, m.level, m.function)
        for m in messages_under(checkout, PATHS, include_info=False)
    ]
