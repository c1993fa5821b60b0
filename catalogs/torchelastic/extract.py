"""torchelastic / torchrun messages from the torch wheel's Python source.

The checkout is an unpacked torch wheel (the directory that holds `torch/`). Failure lines of the
elastic agent are partly logged at INFO ("Worker group FAILED", "Sending process ... closing
signal"), so INFO logs are read too; the mapping keeps the benign ones as context.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.core import Message
from catalogs.pysource import messages_under

EMITTER = "torchelastic"
PATHS = ["torch/distributed/elastic", "torch/distributed/run.py", "torch/distributed/launcher"]


def extract(checkout: Path, release: str) -> list[Message]:
    return [
        Message(EMITTER, release, m.text, m.style, m.file, m.line, m.level, m.function)
        for m in messages_under(checkout, PATHS, include_info=True)
    ]
