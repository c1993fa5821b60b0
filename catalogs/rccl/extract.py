"""RCCL's failure messages: every WARN, and the INFO lines that report a failure.

RCCL is ROCm's fork of NCCL: the same WARN(...) / INFO(...) macros, printed by its src/debug.cc
with NCCL's own prefix ("NCCL WARN", "NCCL INFO"). Reads the C/C++ sources under src/ of one
release; INFO(...) and INFO_LOC(...) lines are kept when their text reports a failure, as for
NCCL (catalogs/nccl_debug.py), since NCCL_DEBUG=INFO logs carry them next to the WARN.

RCCL's build runs hipify-perl over these sources before compiling them (CMakeLists.txt, "Hipify
source files"), and hipify-perl rewrites CUDA API names wherever they stand, string literals
included: RCCL prints "hipIpcGetMemHandle failed : invalid argument" where the source says
cudaIpcGetMemHandle (ROCm/rccl-tests#120). `HIPIFIED` holds the names RCCL's messages contain
with hipify-perl's replacement (HIPIFY rocm-6.2.2, simpleSubstitutions); the text of a message
is the source's with those names replaced, as RCCL prints it.
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core.message import Message
from catalogs.nccl_debug import SOURCE_SUFFIXES, debug_messages

EMITTER = "rccl"

HIPIFIED = {
    "cudaIpcGetMemHandle": "hipIpcGetMemHandle",
    "cuDriverGetVersion": "hipDriverGetVersion",
    "cuInit": "hipInit",
}
_HIPIFIED = re.compile(r"\b(?:" + "|".join(HIPIFIED) + r")\b")


def hipified(text: str) -> str:
    """The text as RCCL prints it: the CUDA names hipify-perl rewrites replaced."""
    return _HIPIFIED.sub(lambda found: HIPIFIED[found.group(0)], text)


def extract(checkout: Path, release: str) -> list[Message]:
    return debug_messages(
        checkout, release, EMITTER, suffixes=(*SOURCE_SUFFIXES, ".hpp"), printed=hipified
    )
