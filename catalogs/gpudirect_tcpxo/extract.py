"""The GCP GPUDirect-TCPXO ("FasTrak") NCCL net plugin's messages.

The plugin logs through Abseil (`LOG(WARNING) << absl::StrFormat("...", ...)`, `LOG_IF`,
`LOG_FIRST_N`, `PLOG`); its log sink (tcpdirect_plugin/fastrak_offload/init.cc) hands every
entry to NCCL's logger as `NET/FasTrak <time>: <text>`, at NCCL's WARN for WARNING, ERROR and
FATAL and at INFO for INFO, with Abseil's file and line. So a line reads
`host:pid:tid [dev] nccl_shim.cc:646 NCCL WARN NET/FasTrak 2026-...: <text>`.

Reads a nccl-plugin-gpudirect-tcpxo tree: the plugin (`tcpdirect_plugin/`) and the client
libraries linked into it (`dxs/client/`, `buffer_mgmt_daemon/client/`, `nccl_cuda/`). The receive
buffer manager daemon (RxDM, `buffer_mgmt_daemon/` outside `client/`) and the prober run in
their own containers and log there, not in the training job's output: they are left out. The
text of a stream is its pieces in order: a string literal as written (`%` doubled), an
`absl::StrFormat("fmt", ...)` as its format, anything else `%s`. VLOG is debug output.
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core.message import Message
from catalogs.csource import literal_value, split_args, strip_comments

EMITTER = "gpudirect_tcpxo"
FOLDERS = ("tcpdirect_plugin", "dxs/client", "buffer_mgmt_daemon/client", "nccl_cuda")
SUFFIXES = (".cc", ".cu", ".h")
_HEAD = re.compile(r"(?<![\w.])(P?LOG|LOG_IF|LOG_FIRST_N|LOG_EVERY_N|PLOG_IF)\s*\(\s*(\w+)")
_FORMAT_CALL = re.compile(r"^absl::StrFormat\s*\(", re.S)
_LEVELS = {"INFO", "WARNING", "ERROR", "FATAL", "DFATAL", "QFATAL"}


def _statement_end(text: str, start: int) -> int:
    """The index of the `;` that ends the statement starting at `start` (strings skipped)."""
    depth, i = 0, start
    while i < len(text):
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < len(text) and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            i = j
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == ";" and depth <= 0:
            return i
        i += 1
    return len(text)


def _pieces(stream: str) -> list[str]:
    """The operands of the top-level `<<` of `stream`."""
    out, depth, i, last = [], 0, 0, 0
    while i < len(stream):
        c = stream[i]
        if c in "\"'":
            j = i + 1
            while j < len(stream) and stream[j] != c:
                j += 2 if stream[j] == "\\" else 1
            i = j
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and stream.startswith("<<", i):
            out.append(stream[last:i])
            last = i + 2
            i += 1
        i += 1
    out.append(stream[last:])
    return [p.strip() for p in out]


def _text(pieces: list[str]) -> str | None:
    parts: list[str] = []
    literal = False
    for piece in pieces:
        value = literal_value(piece)
        if value is not None:
            parts.append(value.replace("%", "%%"))
            literal = True
            continue
        call = _FORMAT_CALL.match(piece)
        if call:
            parsed = split_args(piece, call.end() - 1)
            fmt = literal_value(parsed[0][0]) if parsed and parsed[0] else None
            if fmt is not None:
                parts.append(fmt)
                literal = True
                continue
        if piece in {"std::endl", "'\\n'"}:
            parts.append("\n")
            continue
        parts.append("%s")
    return "".join(parts).strip() if literal else None


_KEYWORDS = {"if", "for", "while", "switch", "return", "catch", "else"}
_DEFINITION = re.compile(r"\b([A-Za-z_]\w*)\s*\([^;{}]*\)\s*(?:const\s*)?(?:override\s*)?\{")


def _function(clean: str, offset: int) -> str:
    """The nearest function definition before `offset` (control statements skipped)."""
    found = ""
    for match in _DEFINITION.finditer(clean, max(0, offset - 20000), offset):
        if match.group(1) not in _KEYWORDS:
            found = match.group(1)
    return found


def _messages(checkout: Path, path: Path, release: str) -> list[Message]:
    clean = strip_comments(path.read_text(encoding="utf-8", errors="replace"))
    rel = path.relative_to(checkout).as_posix()
    out: list[Message] = []
    for head in _HEAD.finditer(clean):
        level = head.group(2)
        if level not in _LEVELS:
            continue
        parsed = split_args(clean, clean.index("(", head.start()))
        if parsed is None:
            continue
        after = parsed[1] + 1
        end = _statement_end(clean, after)
        stream = clean[after:end].strip()
        if not stream.startswith("<<"):
            continue
        text = _text(_pieces(stream[2:]))
        if not text or text == "%s":
            continue
        if head.group(1).startswith("PLOG"):
            text += ": %s"  # PLOG appends strerror(errno)
        out.append(
            Message(
                EMITTER,
                release,
                text,
                "printf" if "%" in text else "literal",
                rel,
                clean.count("\n", 0, head.start()) + 1,
                "INFO" if level == "INFO" else level.lstrip("DQ"),
                _function(clean, head.start()),
            )
        )
    return out


def extract(checkout: Path, release: str) -> list[Message]:
    out: list[Message] = []
    for folder in FOLDERS:
        base = checkout / folder
        if not base.is_dir():
            continue
        for path in sorted(p for p in base.rglob("*") if p.suffix in SUFFIXES and p.is_file()):
            if path.stem.endswith("_test") or "/test" in path.as_posix():
                continue
            out += _messages(checkout, path, release)
    return sorted(set(out))
