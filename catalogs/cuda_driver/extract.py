"""CUDA driver API result codes (`CUresult`): every `CUDA_ERROR_*` member of `cuda.h`.

Driver-API users print the code's name (Triton's and JAX's `CUDA_ERROR_OUT_OF_MEMORY: out of
memory`, cupy's `CUDADriverError: CUDA_ERROR_ILLEGAL_ADDRESS`), so the name is the message. The
checkout is the `nvidia-cuda-runtime-cu12` wheel unpacked (it ships `include/cuda.h`).
"""

from __future__ import annotations

from pathlib import Path

from catalogs.core import Message
from catalogs.enums import members

EMITTER = "cuda_driver"
HEADER = "nvidia/cuda_runtime/include/cuda.h"


def extract(checkout: Path, release: str) -> list[Message]:
    header = (checkout / HEADER).read_text(encoding="utf-8")
    return [
        Message(EMITTER, release, m.name, "literal", HEADER, m.line, "ERROR", m.name)
        for m in members(header, "CUDA_ERROR_")
    ]
