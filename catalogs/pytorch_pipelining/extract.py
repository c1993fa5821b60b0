"""Pipeline parallelism's messages from the torch wheel's Python source:
`torch.distributed.pipelining` (PipelineStage, the schedules, the tracer frontend; from 2.4) and
the older
`torch.distributed.pipeline.sync` (Pipe, torchgpipe's port; up to 2.3).

The checkout is an unpacked torch wheel (the directory that holds `torch/`): what these modules
raise, log at WARNING or above and warn. Each release ships one of the two or both.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.core import Message
from catalogs.pysource import messages_under

EMITTER = "pytorch_pipelining"
PATHS = ["torch/distributed/pipelining", "torch/distributed/pipeline"]
SKIP = ("torch/distributed/pipelining/_schedule_visualizer.py",)


def extract(checkout: Path, release: str) -> list[Message]:
    paths = [p for p in PATHS if (checkout / p).exists()]
    return [
        Message(EMITTER, release, m.text, m.style, m.file, m.line, m.level, m.function)
        for m in messages_under(checkout, paths, skip=SKIP)
    ]
