"""Gloo's failure messages from its C++ source (github.com/pytorch/gloo).

Gloo reports failures through macros whose trailing arguments are streamed into the text:
`GLOO_ENFORCE(cond, ...)` and the comparison forms (`GLOO_ENFORCE_EQ(x, y, ...)`, printed as
`[enforce fail at FILE:LINE] x == y. 12 vs 8. <text>`), `GLOO_ERROR_MSG(...)` (the text of an
`IoException` a pair signals, e.g. `Connection closed by peer [10.0.0.2]:4123`), the `GLOO_THROW*`
forms and `GLOO_ERROR` / `GLOO_WARN` log lines. Tests, benchmarks and examples are left out.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.core import Message
from catalogs.cppsource import macro_messages

EMITTER = "gloo"
MACROS = {
    "GLOO_ENFORCE": 1,
    "GLOO_ENFORCE_THAT": 1,
    "GLOO_ENFORCE_EQ": 2,
    "GLOO_ENFORCE_NE": 2,
    "GLOO_ENFORCE_LE": 2,
    "GLOO_ENFORCE_LT": 2,
    "GLOO_ENFORCE_GE": 2,
    "GLOO_ENFORCE_GT": 2,
    "GLOO_ERROR_MSG": 0,
    "GLOO_THROW": 0,
    "GLOO_THROW_IO_EXCEPTION": 0,
    "GLOO_THROW_INVALID_OPERATION_EXCEPTION": 0,
    "GLOO_ERROR": 0,
    "GLOO_WARN": 0,
}
SKIP = ("gloo/test/", "gloo/benchmark/", "gloo/examples/", "gloo/common/logging.h")


def extract(checkout: Path, release: str) -> list[Message]:
    found: list[Message] = []
    for path in sorted((checkout / "gloo").rglob("*")):
        if path.suffix not in {".cc", ".h", ".cu", ".cuh"}:
            continue
        rel = path.relative_to(checkout).as_posix()
        if rel.startswith(SKIP):
            continue
        for m in macro_messages(path.read_text(encoding="utf-8", errors="replace"), MACROS):
            found.append(
                Message(EMITTER, release, m.text, m.style, rel, m.line, m.level, m.function)
            )
    return found
