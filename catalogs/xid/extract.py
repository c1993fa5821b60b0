"""NVIDIA Xid numbers as the kernel driver logs them: one message per Xid of the reviewed catalog.

The checkout holds `reference/xid.md`, the reviewed table built from NVIDIA's Xid catalog and the
open-gpu-kernel-modules sources (`nverror.h` for number -> mnemonic, `kernel_rc.c` for the line
format `NVRM: Xid (PCI:%04x:%02x:%02x): %d, %s`). Each row of its full table becomes the line
format with that Xid's number filled in; the bus id is kept as one `%s` (the driver prints it as
`%04x:%02x:%02x`) so the rendered example carries a real-looking id such as `0000:3b:00`. The
row's mnemonic is the message's function, its number the line.
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core import Message

EMITTER = "xid"
REFERENCE = "reference/xid.md"
_ROW = re.compile(r"^\| (\d+) \| ([A-Z0-9_]+)", re.M)


def extract(checkout: Path, release: str) -> list[Message]:
    table = (checkout / REFERENCE).read_text(encoding="utf-8")
    table = table[table.index("## Full table") :]
    found: list[Message] = []
    for m in _ROW.finditer(table):
        number, mnemonic = int(m.group(1)), m.group(2)
        text = f"NVRM: Xid (PCI:%s): {number}, %s"
        found.append(
            Message(EMITTER, release, text, "printf", REFERENCE, number, "ERROR", mnemonic)
        )
    return found
