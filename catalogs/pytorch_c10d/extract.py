"""c10d's messages: the Python side (`torch.distributed`) and the C++ side (ProcessGroupNCCL,
ProcessGroupGloo, TCPStore and its backends, socket, Backend/Work, the watchdog, Flight Recorder).

The checkout is the torch wheel unpacked (`pip download torch==<version>` from PyPI: the CUDA
build, whose `torch/lib/libtorch_cuda.so` holds ProcessGroupNCCL). The Python modules are read
with `ast`. The C++ texts are read from the shipped libraries' `.rodata`, where each literal piece
of a `TORCH_CHECK(...)` / `LOG(ERROR) << ...` stream and each whole fmt-style text survives as a
string next to its translation unit's `__FILE__` (see catalogs/sostrings.py): a piece is a
`literal` message (the parts streamed around it are left to the mapping's caveats), an fmt text
is `brace`. Internal assertions (`... INTERNAL ASSERT FAILED at "file":line ...`) keep their
file and line.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.core import Message
from catalogs.pysource import messages_under
from catalogs.sostrings import library_messages

EMITTER = "pytorch_c10d"
PY_PATHS = [
    "torch/distributed/distributed_c10d.py",
    "torch/distributed/rendezvous.py",
    "torch/distributed/utils.py",
    "torch/distributed/c10d_logger.py",
    "torch/distributed/_functional_collectives.py",
    "torch/distributed/device_mesh.py",
    "torch/distributed/flight_recorder",
]
# torch 1.11 to 1.13 split libtorch_cuda; ProcessGroupNCCL is then in libtorch_cuda_cpp.so.
LIBRARIES = [
    "torch/lib/libtorch_cpu.so",
    "torch/lib/libtorch_cuda.so",
    "torch/lib/libtorch_cuda_cpp.so",
]
CXX_PREFIXES = ("torch/csrc/distributed/c10d/",)
CXX_SKIP = ("torch/csrc/distributed/c10d/symm_mem/", "torch/csrc/distributed/c10d/quantization/")


def extract(checkout: Path, release: str) -> list[Message]:
    found = [
        Message(EMITTER, release, m.text, m.style, m.file, m.line, m.level, m.function)
        for m in messages_under(checkout, PY_PATHS)
    ]
    return found + library_messages(checkout, EMITTER, release, LIBRARIES, CXX_PREFIXES, CXX_SKIP)
