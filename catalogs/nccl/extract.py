"""NCCL's failure messages: every WARN, and the INFO lines that report a failure.

Reads the C/C++ sources under src/ of one release (catalogs/nccl_debug.py).
"""

from __future__ import annotations

from pathlib import Path

from catalogs.core.message import Message
from catalogs.nccl_debug import debug_messages


def extract(checkout: Path, release: str) -> list[Message]:
    return debug_messages(checkout, release, "nccl")
