"""cuDNN status codes: every `CUDNN_STATUS_*` member of `cudnn_graph.h` (the v9 sub-codes and the
deprecated v8 names that v9 keeps as aliases).

`cudnnGetErrorString` returns the status name and PyTorch prints `cuDNN error:
CUDNN_STATUS_EXECUTION_FAILED`, so the name is the message. The checkout is the
`nvidia-cudnn-cu12` wheel unpacked (its `include/` only is needed).
"""

from __future__ import annotations

from pathlib import Path

from catalogs.core import Message
from catalogs.enums import members

EMITTER = "cudnn"
HEADER = "nvidia/cudnn/include/cudnn_graph.h"


def extract(checkout: Path, release: str) -> list[Message]:
    header = (checkout / HEADER).read_text(encoding="utf-8")
    return [
        Message(EMITTER, release, m.name, "literal", HEADER, m.line, "ERROR", m.name)
        for m in members(header, "CUDNN_STATUS_")
    ]
