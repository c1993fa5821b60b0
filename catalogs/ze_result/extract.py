"""Level Zero's result codes: every `ZE_RESULT_*` member of `ze_result_t` in include/ze_api.h of
the Level Zero loader and headers (github.com/oneapi-src/level-zero).

Programs over Level Zero (oneCCL's `ze_call::do_call`: "ze error at zeMemOpenIpcHandle, code:
ZE_RESULT_ERROR_INVALID_ARGUMENT", the loader's and validation layer's reports, SYCL and
IPEX's Level Zero back ends) print a failed call's result by its enumerator name, so the name is
the message (level RESULT, its function the name too). The header's `///<` comment after each
member (continued on the `///<` lines below it) is what the code means; it is kept as the
message's documented meaning in CATALOG.json through mapping.yaml's caveats, not here.
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core import Message

EMITTER = "ze_result"
HEADER = "include/ze_api.h"
_ENUM = re.compile(r"typedef\s+enum\s+_ze_result_t\s*\{(?P<body>.*?)\}\s*ze_result_t\s*;", re.S)
_MEMBER = re.compile(r"^\s*(ZE_RESULT_\w+)\s*=", re.M)


def extract(checkout: Path, release: str) -> list[Message]:
    text = (checkout / HEADER).read_text(encoding="utf-8")
    enum = _ENUM.search(text)
    if enum is None:
        return []
    messages: list[Message] = []
    for member in _MEMBER.finditer(enum.group("body")):
        name = member.group(1)
        if name == "ZE_RESULT_FORCE_UINT32":
            continue  # the enum's width marker, never returned
        line = text.count("\n", 0, enum.start("body") + member.start(1)) + 1
        messages.append(Message(EMITTER, release, name, "literal", HEADER, line, "RESULT", name))
    return messages


def meanings(checkout: Path) -> dict[str, str]:
    """Each member's `///<` comment, its continuation lines joined (for reviewing the mapping)."""
    text = (checkout / HEADER).read_text(encoding="utf-8")
    enum = _ENUM.search(text)
    found: dict[str, str] = {}
    if enum is None:
        return found
    current = ""
    for line in enum.group("body").splitlines():
        member = re.match(r"\s*(ZE_RESULT_\w+)\s*=[^/]*(?:///<\s*(.*))?$", line)
        if member:
            current = member.group(1)
            found[current] = (member.group(2) or "").strip()
            continue
        more = re.match(r"\s*///<\s*(.*)$", line)
        if more and current:
            found[current] = f"{found[current]} {more.group(1).strip()}".strip()
    return found
