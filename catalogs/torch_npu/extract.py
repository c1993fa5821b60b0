"""Ascend's PyTorch adapter (torch_npu, github.com/Ascend/pytorch): its failure messages.

The C++ side (torch_npu/csrc) reports through PyTorch's macros with streamed pieces:
`TORCH_CHECK(cond, ...)` (a Python caller sees `RuntimeError: <text>`), `TORCH_CHECK_WITH(type,
cond, ...)` (`torch.OutOfMemoryError` for `NPU out of memory. Tried to allocate ...`), `AT_ERROR`,
and the warnings `TORCH_WARN`, `TORCH_NPU_WARN`, `TORCH_NPU_WARN_ONCE`. The NPU/OPS/HCCL check
macros of NPUException.h and the distributed process group build their texts from these too
(`<func>:<file>:<line> NPU function error: <call>, error code is <n>`, `... OPS function error:
...`, `... HCCL function error: ...`). Pieces that are expressions become `{}`. The HCCL process
group's watchdog logs through glog streams (`LOG(ERROR) << ...`), read at ERROR and WARNING. The
Python package is read with `ast`. The `ASCEND_LOG*` lines go to CANN's own log files
(~/ascend/log), not to the job's output, and are left out; so are tests, benchmarks and the code
generator.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.core import Message
from catalogs.cppsource import macro_messages
from catalogs.cppstreams import stream_messages
from catalogs.pysource import messages_under

EMITTER = "torch_npu"
MACROS = {
    "TORCH_CHECK": 1,
    "TORCH_CHECK_WITH": 2,
    "AT_ERROR": 0,
    "TORCH_WARN": 0,
    "TORCH_WARN_ONCE": 0,
    "TORCH_NPU_WARN": 0,
    "TORCH_NPU_WARN_ONCE": 0,
}
LEVELS = {
    "TORCH_CHECK": "RuntimeError",
    "AT_ERROR": "RuntimeError",
    "TORCH_CHECK_WITH": "RuntimeError",
    "TORCH_WARN_ONCE": "TORCH_WARN",
    "TORCH_NPU_WARN": "TORCH_WARN",
    "TORCH_NPU_WARN_ONCE": "TORCH_WARN",
}
STREAM_LEVELS = {"ERROR", "WARNING"}
SUFFIXES = {".cpp", ".hpp", ".h", ".cc"}
PY_SKIP = ("torch_npu/testing", "torch_npu/_inductor", "torch_npu/utils/_dynamo")


def extract(checkout: Path, release: str) -> list[Message]:
    found: list[Message] = []
    for path in sorted((checkout / "torch_npu" / "csrc").rglob("*")):
        if path.suffix not in SUFFIXES or not path.is_file():
            continue
        rel = path.relative_to(checkout).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in macro_messages(text, MACROS):
            level = LEVELS.get(m.level, m.level)
            found.append(Message(EMITTER, release, m.text, m.style, rel, m.line, level, m.function))
        for m in stream_messages(text, ("LOG",)):
            if m.level in STREAM_LEVELS:
                found.append(
                    Message(EMITTER, release, m.text, m.style, rel, m.line, m.level, m.function)
                )
    found += [
        Message(EMITTER, release, m.text, m.style, m.file, m.line, m.level, m.function)
        for m in messages_under(checkout, ["torch_npu"], skip=("torch_npu/csrc", *PY_SKIP))
    ]
    return found
