"""Text Generation Inference's failure messages, from the source of a pinned release.

Two halves print what a failed TGI run shows: the Rust launcher and router (`tracing::error!` /
`warn!` texts, the `#[error("...")]` texts of their error enums, which is what an `Err(...)`
displays, and `panic!` / `.expect()` texts), and the Python model server
(`server/text_generation_server`: raises, loguru errors and warnings; the launcher relays them).
Per-model files (`models/custom_modeling/`) are out of scope.
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.python_messages import release_root, scan, to_messages

PY_INCLUDE = ("server/text_generation_server/",)
PY_EXCLUDE = (
    "server/text_generation_server/models/custom_modeling/",
    "server/text_generation_server/pb/",
)
RUST_DIRS = ("launcher/src", "router/src", "backends/v3/src")

# A macro or attribute whose first string argument is a message, and the level it prints at.
_START = re.compile(
    r"(?P<kind>(?:tracing::)?(?P<lvl>error|warn)!\s*\(|#\[error\(|panic!\s*\(|\.expect\(|"
    r"(?:anyhow::)?(?:bail|anyhow)!\s*\()"
)
_TARGET = re.compile(r"\s*(?:target\s*:\s*[^,]+,|[a-z_]+\s*=\s*[^,]+,|%?[a-z_.]+\s*,)*\s*")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "0": "\0"}


def _string_at(src: str, pos: int) -> tuple[str, bool] | None:
    """The Rust string literal starting at `pos` (after optional whitespace): its value and
    whether it was raw; None when no literal starts there."""
    m = re.compile(r'\s*(r(#*)")').match(src, pos)
    if m:
        hashes = m.group(2)
        end = src.find('"' + hashes, m.end())
        return (src[m.end() : end], True) if end >= 0 else None
    m = re.compile(r'\s*"').match(src, pos)
    if not m:
        return None
    out: list[str] = []
    i = m.end()
    while i < len(src):
        c = src[i]
        if c == '"':
            return "".join(out), False
        if c == "\\" and i + 1 < len(src):
            nxt = src[i + 1]
            if nxt == "\n":  # line continuation: skip the newline and the indentation
                i += 2
                while i < len(src) and src[i] in " \t":
                    i += 1
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return None


def _rust_level(kind: str, lvl: str | None) -> str:
    if lvl == "warn":
        return "WARN"
    if lvl == "error" or kind.startswith("#[error"):
        return "ERROR"
    return "panic"


def scan_rust(root: Path) -> list[tuple[str, str, str, int, str, str]]:
    """(text, style, file, line, level, function) for every message in the Rust sources."""
    found: list[tuple[str, str, str, int, str, str]] = []
    files = sorted(p for d in RUST_DIRS for p in (root / d).rglob("*.rs") if (root / d).is_dir())
    for path in files:
        rel = path.relative_to(root).as_posix()
        src = path.read_text(encoding="utf-8", errors="replace")
        for m in _START.finditer(src):
            pos = m.end()
            lit = _string_at(src, pos)
            if lit is None and m.group("lvl"):
                t = _TARGET.match(src, pos)  # skip `target: ..., field = value,` arguments
                lit = _string_at(src, t.end()) if t else None
            if lit is None:
                continue
            text, _raw = lit
            if not re.search(r"[A-Za-z]{3}", text):
                continue
            style = "fmt" if re.search(r"(?<!\{)\{[^{}]*\}", text) else "literal"
            line = src.count("\n", 0, m.start()) + 1
            func = re.findall(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)", src[: m.start()])
            level = _rust_level(m.group("kind"), m.group("lvl"))
            found.append((text, style, rel, line, level, func[-1] if func else ""))
    return found


def extract(checkout: Path, release: str) -> list:
    from catalogs.core import Message

    root = release_root(checkout, release)
    messages = to_messages(scan(root, PY_INCLUDE, PY_EXCLUDE), "tgi", release)
    for text, style, file, line, level, function in scan_rust(root):
        found = Message("tgi", release, text, style, file, line, level, function)  # type: ignore[arg-type]
        messages.append(found)
    return messages
