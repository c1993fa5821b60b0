"""`denpex.probe`: per-layer weight-delta norms and checksums, logged by a training script.

Consumes a model (anything with `named_parameters()`, e.g. a `torch.nn.Module`) and the step
number; produces one JSON line per parameter tensor every `every` steps:
`{"denpex_probe": 1, "step": 40, "rank": 3, "layer": "fc1.weight", "delta_norm": 0.0123,
"norm": 4.56, "checksum": "9f2c..."}`. `delta_norm` is the norm of the change since the last
probed step, `checksum` a digest of the tensor's bytes (equal across data-parallel replicas
while they agree). `denpex diagnose` reads these lines from the logs to name the first layer and
step where an update became non-finite or jumped, or where replicas stopped agreeing.

torch is imported here only when the probe runs, inside a training script; the diagnosis path
never imports it. Keeping the previous weights costs one float32 copy of the parameters on the
host; probe every few hundred steps on large models.

    probe = Probe(model, every=50, rank=dist.get_rank())
    for step in range(steps):
        ...
        optimizer.step()
        probe.after_step(step)
"""

from __future__ import annotations

import hashlib
import json
import logging
import sys
from collections.abc import Callable
from typing import Any

from denpex.progress.formats import PROBE_KEY

__all__ = ["Probe"]


class Probe:
    def __init__(
        self,
        model: Any,
        *,
        every: int = 50,
        rank: int | None = None,
        write: Callable[[str], None] | None = None,
    ) -> None:
        if every < 1:
            raise ValueError("every must be at least 1")
        self.model = model
        self.every = every
        self.rank = rank
        self._write = write or _stderr_line
        self._previous: dict[str, Any] = {}

    def after_step(self, step: int) -> None:
        """Log every parameter's change since the last probe, every `every` steps."""
        if step % self.every:
            return
        import torch  # only training scripts pay for torch

        with torch.no_grad():
            for name, parameter in self.model.named_parameters():
                current = parameter.detach().to("cpu", torch.float32, copy=True)
                before = self._previous.get(name)
                delta = (current - before).norm().item() if before is not None else None
                self._previous[name] = current
                record = {
                    PROBE_KEY: 1,
                    "step": step,
                    "rank": self.rank,
                    "layer": name,
                    "delta_norm": delta,
                    "norm": current.norm().item(),
                    "checksum": hashlib.blake2b(
                        parameter.detach().cpu().contiguous().numpy().tobytes(), digest_size=8
                    ).hexdigest(),
                }
                self._write(json.dumps(record, allow_nan=True))


def _stderr_line(line: str) -> None:
    sys.stderr.write(line + "\n")


def logging_writer(logger: logging.Logger) -> Callable[[str], None]:
    """Write probe lines through a logger (they keep the logger's prefix and timestamp)."""
    return logger.info
