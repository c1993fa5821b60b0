"""aws-ofi-nccl's messages: NCCL_OFI_WARN and NCCL_OFI_INFO, which NCCL's logger prints as
`NCCL WARN NET/OFI ...` and `NCCL INFO NET/OFI ...`.

Reads an aws-ofi-nccl release tree (`src/`, `include/`; C up to 1.13, C++ after). The text is
the format with the "NET/OFI " prefix the macros put in front. NCCL_OFI_TRACE is debug output
compiled out of release builds and is not extracted.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.core.message import Message
from catalogs.csource import find_calls

EMITTER = "aws_ofi_nccl"
CALLS: dict[str, tuple[int, str]] = {"NCCL_OFI_WARN": (0, "WARN"), "NCCL_OFI_INFO": (1, "INFO")}
PREFIX = "NET/OFI "
SUFFIXES = (".c", ".cpp", ".h", ".hpp")


def extract(checkout: Path, release: str) -> list[Message]:
    out: list[Message] = []
    for folder in ("src", "include"):
        base = checkout / folder
        if not base.is_dir():
            continue
        for path in sorted(p for p in base.rglob("*") if p.suffix in SUFFIXES and p.is_file()):
            source = path.read_text(encoding="utf-8", errors="replace")
            calls = find_calls(source, CALLS, format_arg={k: v[0] for k, v in CALLS.items()})
            for call in calls:
                text = (PREFIX + call.text).rstrip("\n")
                out.append(
                    Message(
                        emitter=EMITTER,
                        release=release,
                        text=text,
                        style="printf" if "%" in text else "literal",
                        file=str(path.relative_to(checkout)),
                        line=call.line,
                        level=CALLS[call.name][1],
                        function=call.function,
                    )
                )
    return sorted(set(out))
