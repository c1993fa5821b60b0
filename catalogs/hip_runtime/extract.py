"""HIP runtime error strings: every `hipError_t` code with the text `hipGetErrorString` returns,
and the runtime's own reports of a code object missing for the GPU.

Reads ROCm/clr's hipamd/src: `ihipGetErrorString` in hip_error.cpp pairs each code (its `case`
labels) with the string it returns; a code's message is the wording PyTorch's ROCm build raises,
`HIP error: <string>` (C10_HIP_CHECK). `hipSuccess` ("no error") is no failure and is left out.
hip_code_object.cpp and hip_fatbin.cpp log `hipErrorNoBinaryForGpu: ...` with LogPrintfError
when no code object fits the GPU (a format passed as `"%s", "<text>"` is that text).
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core.csource import find_calls
from catalogs.core.message import Message

EMITTER = "hip_runtime"
ERRORS = "hipamd/src/hip_error.cpp"
CODE_OBJECTS = ("hipamd/src/hip_code_object.cpp", "hipamd/src/hip_fatbin.cpp")
PREFIX = "HIP error: "
# case labels (one or more, `default:` among them) and the string literal(s) they return
_ARM = re.compile(
    r'((?:\s*(?:case\s+\w+|default)\s*:)+)\s*return\s+((?:"(?:[^"\\\n]|\\.)*"\s*)+);', re.S
)
_LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')


def error_strings(source: str) -> list[tuple[str, str, int]]:
    """(code, string, line) for every code `ihipGetErrorString` names, in source order."""
    start = source.index("ihipGetErrorString(hipError_t")
    end = source.find("\n}", start)
    body = source[start:end]
    base = source.count("\n", 0, start) + 1
    found = []
    for arm in _ARM.finditer(body):
        text = "".join(_LITERAL.findall(arm.group(2)))
        for label in re.finditer(r"case\s+(\w+)", arm.group(1)):
            line = base + body.count("\n", 0, arm.start(1) + label.start())
            found.append((label.group(1), text, line))
    return found


def extract(checkout: Path, release: str) -> list[Message]:
    messages: list[Message] = []
    source = (checkout / ERRORS).read_text(encoding="utf-8")
    for code, text, line in error_strings(source):
        if code == "hipSuccess":
            continue
        messages.append(
            Message(EMITTER, release, PREFIX + text, "literal", ERRORS, line, "ERROR", code)
        )
    for relative in CODE_OBJECTS:
        path = checkout / relative
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for call in find_calls(text, ("LogPrintfError",)):
            fmt = call.args[0] if call.args else ""
            if fmt == "%s" and len(call.args) > 1:
                fmt = call.args[1]
            if not fmt.startswith("hipError"):
                continue
            style = "printf" if "%" in fmt else "literal"
            messages.append(
                Message(EMITTER, release, fmt, style, relative, call.line, "LogPrintfError")
            )
    return messages
