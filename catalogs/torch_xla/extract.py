"""PyTorch/XLA's (torch_xla, github.com/pytorch/xla) own failure messages.

The C++ side reports through stream macros (torch_xla/csrc/runtime/debug_macros.h, tf_logging.h):
`XLA_CHECK(cond) << "..."` and its comparison forms throw `std::runtime_error` whose text is
`<file>:<line> : Check failed: <cond> ` then the stack trace and the streamed pieces;
`XLA_ERROR() << "..."` throws `<file>:<line> : <pieces>`; `TF_LOG(ERROR|WARNING) << ...` logs.
Each streamed piece that is not a literal is `{}`. `TORCH_CHECK(cond, ...)` pieces are read as
for the other PyTorch extensions. The Python package is read with
`ast`. Tests, benchmarks and the experimental tree are left out.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.core import Message
from catalogs.cppsource import macro_messages
from catalogs.cppstreams import stream_messages
from catalogs.pysource import messages_under

EMITTER = "torch_xla"
CHECKS = (
    "XLA_CHECK",
    "XLA_CHECK_EQ",
    "XLA_CHECK_NE",
    "XLA_CHECK_LE",
    "XLA_CHECK_LT",
    "XLA_CHECK_GE",
    "XLA_CHECK_GT",
    "XLA_ERROR",
)
LOG_LEVELS = {"ERROR", "WARNING"}
MACROS = {"TORCH_CHECK": 1, "TORCH_WARN": 0}
SUFFIXES = {".cpp", ".cc", ".h", ".hpp"}
PY_SKIP = ("torch_xla/experimental", "torch_xla/_internal/test", "torch_xla/benchmarks")


def extract(checkout: Path, release: str) -> list[Message]:
    found: list[Message] = []
    for path in sorted((checkout / "torch_xla" / "csrc").rglob("*")):
        if path.suffix not in SUFFIXES or not path.is_file():
            continue
        rel = path.relative_to(checkout).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in stream_messages(text, CHECKS):
            found.append(
                Message(EMITTER, release, m.text, m.style, rel, m.line, "XLA_CHECK", m.function)
            )
        for m in stream_messages(text, ("TF_LOG",)):
            if m.level in LOG_LEVELS:
                level = f"TSL_{m.level}"
                found.append(
                    Message(EMITTER, release, m.text, m.style, rel, m.line, level, m.function)
                )
        for m in macro_messages(text, MACROS):
            level = "RuntimeError" if m.level == "TORCH_CHECK" else "TORCH_WARN"
            found.append(Message(EMITTER, release, m.text, m.style, rel, m.line, level, m.function))
    found += [
        Message(EMITTER, release, m.text, m.style, m.file, m.line, m.level, m.function)
        for m in messages_under(checkout, ["torch_xla"], skip=("torch_xla/csrc", *PY_SKIP))
    ]
    return found
