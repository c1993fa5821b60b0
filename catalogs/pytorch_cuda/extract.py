"""PyTorch's CUDA layer: the caching allocator (`c10/cuda/CUDACachingAllocator.cpp`, its OOM
texts and the cudaMallocAsync backend), CUDA error checks and device setup (`c10/cuda`), and
`torch.cuda`'s Python messages (initialisation, lazy init in forked children, memory).

The checkout is the torch wheel unpacked (the PyPI CUDA build, whose `torch/lib/libc10_cuda.so`
is c10/cuda compiled). The C++ texts are read from the library's `.rodata` as in the c10d catalog
(see catalogs/sostrings.py); the Python modules with `ast`.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.core import Message
from catalogs.pysource import messages_under
from catalogs.sostrings import fragments

EMITTER = "pytorch_cuda"
PY_PATHS = ["torch/cuda/__init__.py", "torch/cuda/memory.py"]
LIBRARY = "torch/lib/libc10_cuda.so"


def extract(checkout: Path, release: str) -> list[Message]:
    found = [
        Message(EMITTER, release, m.text, m.style, m.file, m.line, m.level, m.function)
        for m in messages_under(checkout, PY_PATHS)
    ]
    for f in fragments(checkout / LIBRARY, ("c10/cuda/",)):
        found.append(Message(EMITTER, release, f.text, f.style, f.file, f.line, f.level, ""))  # type: ignore[arg-type]
    return found
