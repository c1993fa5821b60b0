"""torch.save / torch.load messages from the torch wheel's Python source.

The checkout is an unpacked torch wheel (the directory that holds `torch/`): what
`torch/serialization.py` (torch.save, torch.load, the zip and legacy formats, map_location,
mmap, safe globals), `torch/_weights_only_unpickler.py` (the weights_only=True unpickler whose
refusals `torch.load` re-raises under "Weights only load failed"), `torch/storage.py` (the
storages a checkpoint is read into) and `torch/hub.py` (load_state_dict_from_url, the hub
download and its hash check) raise, log at WARNING or above, and warn.

The weights_only unpickler's refusals (RuntimeError in 2.4, UnpicklingError from 2.5) never reach
the log under their own type: `torch.load` catches them and re-raises `UnpicklingError: Weights
only load failed. ...` with the refusal after `WeightsUnpickler error: ` (or, from 2.5, alone on
a line of its own when no global is named). They get the level `WeightsUnpickler`, whose
`line_template` prints them that way.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.core import Message
from catalogs.pysource import messages_under

EMITTER = "pytorch_serialization"
PATHS = [
    "torch/serialization.py",
    "torch/_weights_only_unpickler.py",
    "torch/storage.py",
    "torch/hub.py",
]
UNPICKLER = "torch/_weights_only_unpickler.py"
REWRAPPED = {"RuntimeError", "UnpicklingError"}  # what torch.load catches around the unpickler


def _level(file: str, level: str) -> str:
    return "WeightsUnpickler" if file == UNPICKLER and level in REWRAPPED else level


def extract(checkout: Path, release: str) -> list[Message]:
    return [
        Message(
            EMITTER, release, m.text, m.style, m.file, m.line, _level(m.file, m.level), m.function
        )
        for m in messages_under(checkout, [p for p in PATHS if (checkout / p).exists()])
    ]
