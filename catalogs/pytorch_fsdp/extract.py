"""FSDP (FSDP1 and FSDP2) and the DTensor / DeviceMesh / tensor-parallel stack's messages from
the torch wheel's Python source.

The checkout is an unpacked torch wheel (the directory that holds `torch/`): what these modules
raise, log at WARNING or above, and warn. Which paths a release has differs: FSDP2 lives in
`torch/distributed/_composable/fsdp` in 2.4 and in `torch/distributed/fsdp/_fully_shard` from
2.6 (the old path a re-export); DTensor moved from `torch/distributed/_tensor` (2.4) to
`torch/distributed/tensor` (2.5 on; `_tensor` a re-export); `_composable/fully_shard.py` (the
composable FSDP1) is in 2.4 only and `_composable/replicate_with_fsdp.py` in 2.13 only. Paths a
release lacks are skipped.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.core import Message
from catalogs.pysource import messages_under

EMITTER = "pytorch_fsdp"
PATHS = [
    "torch/distributed/fsdp",
    "torch/distributed/_composable",
    "torch/distributed/tensor",
    "torch/distributed/_tensor",
    "torch/distributed/device_mesh.py",
    "torch/distributed/_functional_collectives.py",
]


def extract(checkout: Path, release: str) -> list[Message]:
    return [
        Message(EMITTER, release, m.text, m.style, m.file, m.line, m.level, m.function)
        for m in messages_under(checkout, [p for p in PATHS if (checkout / p).exists()])
    ]
