"""cuBLAS status codes: every `CUBLAS_STATUS_*` member of `cublas_api.h` but success.

PyTorch prints a failing call as ``CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling
`cublasGemmEx(...)` ``, so the status name is the message. The checkout is the
`nvidia-cublas-cu12` wheel unpacked.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.core import Message
from catalogs.enums import members

EMITTER = "cublas"
HEADER = "nvidia/cublas/include/cublas_api.h"


def extract(checkout: Path, release: str) -> list[Message]:
    header = (checkout / HEADER).read_text(encoding="utf-8")
    return [
        Message(EMITTER, release, m.name, "literal", HEADER, m.line, "ERROR", m.name)
        for m in members(header, "CUBLAS_STATUS_")
    ]
