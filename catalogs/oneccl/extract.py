"""oneCCL's failure messages from its C++ source (github.com/uxlfoundation/oneCCL).

oneCCL reports through variadic macros whose arguments are streamed into one text
(src/common/log/log.hpp): `LOG_ERROR(...)` prints `<time>:(<tid>) |CCL_ERROR| file.cpp:338
function: <text>`, `LOG_WARN(...)` prints `<time>:(<tid>) |CCL_WARN| <text>`, `CCL_THROW(...)`
throws `ccl::exception` whose text is `oneCCL: file.cpp:338 function: EXCEPTION: <text>`,
`CCL_THROW_IF_NOT(cond, ...)` logs `condition <cond> failed` then throws the same, and
`CCL_FATAL(...)` logs the error and terminates. The transport layer's checks (`ATL_OFI_CALL`,
`ATL_CALL`, `KVS_ERROR_IF_NOT`) print through the same macros. Info, debug and trace lines and
debug-build-only asserts are left out; so are the logger's own header and the SYCL kernels.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.core import Message
from catalogs.cppsource import macro_messages, source_files

EMITTER = "oneccl"
MACROS = {
    "LOG_ERROR": 0,
    "LOG_WARN": 0,
    "LOG_WARN_ROOT": 0,
    "CCL_FATAL": 0,
    "CCL_THROW": 0,
    "CCL_THROW_WITH_ERROR": 0,
    "CCL_THROW_IF_NOT": 1,
    "KVS_ERROR_IF_NOT": 1,
    "KVS_CHECK_STATUS": 1,
}
# the printed prefix is the same for these: one level each
LEVELS = {
    "LOG_WARN_ROOT": "LOG_WARN",
    "CCL_FATAL": "LOG_ERROR",
    "KVS_ERROR_IF_NOT": "LOG_ERROR",
    "KVS_CHECK_STATUS": "LOG_ERROR",
    "CCL_THROW_WITH_ERROR": "CCL_THROW",
    "CCL_THROW_IF_NOT": "CCL_THROW",
}
SUFFIXES = {".cpp", ".hpp", ".h", ".c", ".cc"}
SKIP = ("src/common/log/log.hpp", "src/kernels/")


def extract(checkout: Path, release: str) -> list[Message]:
    found: list[Message] = []
    for path, rel in source_files(checkout, SUFFIXES, SKIP):
        for m in macro_messages(path.read_text(encoding="utf-8", errors="replace"), MACROS):
            level = LEVELS.get(m.level, m.level)
            found.append(Message(EMITTER, release, m.text, m.style, rel, m.line, level, m.function))
    return found
