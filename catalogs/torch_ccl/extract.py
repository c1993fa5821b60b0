"""The oneCCL bindings for PyTorch (github.com/intel/torch-ccl): ProcessGroupCCL's messages.

The C++ process group reports through PyTorch's macros: `TORCH_CHECK(cond, ...)` (its streamed
pieces joined, each expression a `{}`; a Python caller sees `RuntimeError: <text>`), `AT_ERROR`
and `TORCH_WARN`. The Python package (`oneccl_bindings_for_pytorch`) is read with `ast`. oneCCL's
own errors, which this package passes on, are the oneccl catalog's. Tests and the vendored
command-line parser are left out.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.core import Message
from catalogs.cppsource import macro_messages, source_files
from catalogs.pysource import messages_under

EMITTER = "torch_ccl"
MACROS = {"TORCH_CHECK": 1, "AT_ERROR": 0, "TORCH_WARN": 0, "TORCH_WARN_ONCE": 0}
LEVELS = {
    "TORCH_CHECK": "RuntimeError",
    "AT_ERROR": "RuntimeError",
    "TORCH_WARN_ONCE": "TORCH_WARN",
}
SUFFIXES = {".cpp", ".hpp", ".h", ".cc"}
SKIP = ("src/test/", "src/gpu/cxxopts.hpp")


def extract(checkout: Path, release: str) -> list[Message]:
    found: list[Message] = []
    for path, rel in source_files(checkout, SUFFIXES, SKIP):
        for m in macro_messages(path.read_text(encoding="utf-8", errors="replace"), MACROS):
            level = LEVELS.get(m.level, m.level)
            found.append(Message(EMITTER, release, m.text, m.style, rel, m.line, level, m.function))
    package = "oneccl_bindings_for_pytorch"
    if (checkout / package).is_dir():
        found += [
            Message(EMITTER, release, m.text, m.style, m.file, m.line, m.level, m.function)
            for m in messages_under(checkout, [package])
        ]
    return found
