"""Members of C enums (and Python constants) named with a fixed prefix, with their doc comments.

The CUDA, cuBLAS, cuDNN and NVML headers declare their error codes as enum members such as
`cudaErrorIllegalAddress = 700,` followed or preceded by a doc comment; this returns each member's
name, value text, line and comment. Nothing is decided here about what a code means.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Member:
    name: str
    value: str
    line: int
    doc: str


def members(src: str, prefix: str) -> list[Member]:
    """Every `<prefix>Name [attrs] = value` member in source order (first definition wins)."""
    pattern = re.compile(rf"^\s*({re.escape(prefix)}\w+)(?:\s+\w+)?\s*=\s*([^,/\n]+)", re.M)
    out: dict[str, Member] = {}
    for m in pattern.finditer(src):
        name = m.group(1)
        if name in out:
            continue
        line = src.count("\n", 0, m.start()) + 1
        out[name] = Member(name, m.group(2).strip(), line, _doc_near(src, m))
    return list(out.values())


def _doc_near(src: str, m: re.Match[str]) -> str:
    """The `/**< ... */` after the member or the `/** ... */` block right before it."""
    after = re.match(r"[^\n]*?/\*\*<(.*?)\*/", src[m.end() :], re.S)
    if after:
        return _clean(after.group(1))
    before = re.search(r"/\*\*((?:(?!\*/).)*?)\*/\s*$", src[: m.start()], re.S)
    return _clean(before.group(1)) if before else ""


def _clean(doc: str) -> str:
    return " ".join(line.strip().lstrip("*").strip() for line in doc.splitlines()).strip()
