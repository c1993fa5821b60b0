"""CUDA runtime error strings: every `cudaError_t` member and the text `cudaGetErrorString` returns.

The checkout is the `nvidia-cuda-runtime-cu12` wheel unpacked (it ships `include/driver_types.h`
and `lib/libcudart.so.12`) plus `reference/cuda_errors.md`, the reviewed table of printed
strings (its section 6 pairs each code with the text libcudart prints). A code's message is
that string, the text `cudaGetErrorString` returns: every program quotes it in its own wrapper
(PyTorch's `CUDA error: <string>`, NCCL's `Cuda failure '<string>'`, nccl-tests' `CUDA failure
common.cu:892 '<string>'`, CuPy's `cudaErrorMemoryAllocation: <string>`), so the wrappers are the
anchor (`source.yaml`) that a string too short to stand alone is matched after. A code whose
string the reference does not give is kept with its enum name alone.
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core import Message
from catalogs.enums import members

EMITTER = "cuda_runtime"
HEADER = "nvidia/cuda_runtime/include/driver_types.h"
REFERENCE = "reference/cuda_errors.md"
_ROW = re.compile(r"^\| (\d+) \| `(cudaError\w+)` \| `([^`]+)` \|", re.M)


def printed_strings(reference: str) -> dict[str, str]:
    return {m.group(2): m.group(3) for m in _ROW.finditer(reference)}


def extract(checkout: Path, release: str) -> list[Message]:
    header = (checkout / HEADER).read_text(encoding="utf-8")
    strings = printed_strings((checkout / REFERENCE).read_text(encoding="utf-8"))
    found: list[Message] = []
    for member in members(header, "cudaError"):
        text = strings.get(member.name, member.name)
        found.append(
            Message(EMITTER, release, text, "literal", HEADER, member.line, "ERROR", member.name)
        )
    return found
