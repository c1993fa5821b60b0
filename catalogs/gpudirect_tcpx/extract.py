"""The GCP GPUDirect-TCPX NCCL net plugin's messages: WARN and INFO, which NCCL's logger prints
as `NCCL WARN ...` / `NCCL INFO ...` (the plugin hands them to the ncclDebugLogger_t NCCL gives
it, with its function as the file: `tcpxResult_t tcpxCommProgress(tcpxComm*):1231 NCCL WARN`).

Reads a nccl-plugin-gpudirecttcpx tree (`src/`). `PRODUCT_NAME` is "GPUDirectTCPX"
(src/macro.h), so `"NET/" PRODUCT_NAME " ..."` reads "NET/GPUDirectTCPX ...". The native
adapter (src/adapter/native, a build without NCCL) and the tests are left out; TRACE is compiled
out of release builds.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.core.message import Message
from catalogs.csource import find_calls

EMITTER = "gpudirect_tcpx"
CALLS: dict[str, tuple[int, str]] = {"WARN": (0, "WARN"), "INFO": (1, "INFO")}
MACROS = {"PRODUCT_NAME": "GPUDirectTCPX"}
SUFFIXES = (".cc", ".cu", ".h", ".cpp", ".c")
SKIP = ("src/adapter/native/",)


def extract(checkout: Path, release: str) -> list[Message]:
    out: list[Message] = []
    base = checkout / "src"
    for path in sorted(p for p in base.rglob("*") if p.suffix in SUFFIXES and p.is_file()):
        rel = path.relative_to(checkout).as_posix()
        if rel.startswith(SKIP) or path.stem.endswith("_test"):
            continue
        source = path.read_text(encoding="utf-8", errors="replace")
        calls = find_calls(
            source, CALLS, format_arg={k: v[0] for k, v in CALLS.items()}, macros=MACROS
        )
        for call in calls:
            text = call.text.rstrip("\n")
            if not text.strip():
                continue
            out.append(
                Message(
                    emitter=EMITTER,
                    release=release,
                    text=text,
                    style="printf" if "%" in text else "literal",
                    file=rel,
                    line=call.line,
                    level=CALLS[call.name][1],
                    function=call.function,
                )
            )
    return sorted(set(out))
