"""torch.distributed.rpc's messages: the Python API and the C++ agents (TensorPipe, the RRef
context, the request callbacks) with distributed autograd, which runs on RPC.

The checkout is the torch wheel unpacked (`pip download torch==<version>` from PyPI). The Python
modules are read with `ast`; the C++ texts (`TORCH_CHECK(agent, "Current RPC agent is not set!")`,
the TensorPipe agent's `LOG(WARNING) << ...` pieces) from `torch/lib/libtorch_cpu.so`'s `.rodata`
(see catalogs/sostrings.py): each literal piece is a `literal` message named after the nearest
translation unit, fmt texts stay whole. The faulty agent of RPC's own tests is left out.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.core import Message
from catalogs.pysource import messages_under
from catalogs.sostrings import library_messages

EMITTER = "pytorch_rpc"
PY_PATHS = [
    "torch/distributed/rpc",
    "torch/distributed/autograd",
    "torch/distributed/nn/api/remote_module.py",
]
PY_SKIP = ("torch/distributed/rpc/_testing",)
LIBRARIES = ["torch/lib/libtorch_cpu.so", "torch/lib/libtorch_cuda.so"]
CXX_PREFIXES = ("torch/csrc/distributed/rpc/", "torch/csrc/distributed/autograd/")
CXX_SKIP = ("torch/csrc/distributed/rpc/testing/",)


def extract(checkout: Path, release: str) -> list[Message]:
    paths = [p for p in PY_PATHS if (checkout / p).exists()]
    found = [
        Message(EMITTER, release, m.text, m.style, m.file, m.line, m.level, m.function)
        for m in messages_under(checkout, paths, skip=PY_SKIP)
    ]
    return found + library_messages(checkout, EMITTER, release, LIBRARIES, CXX_PREFIXES, CXX_SKIP)
