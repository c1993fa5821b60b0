"""Text Generation Inference's failure messages, from the source of a pinned release.

Two halves print what a failed TGI run shows: the Rust launcher and router (`tracing::error!` /
`warn!` texts, the `#[error("...")]` texts of their error enums, which is what an `Err(...)`
displays, and `panic!` / `.expect()` texts), and the Python model server
(`server/text_generation_server`: raises, loguru errors and warnings; the launcher relays them).
Per-model files (`models/custom_modeling/`) are out of scope.
"""

from __future__ import annotations

from pathlib import Path

from catalogs import rustsource
from catalogs.python_messages import release_root, scan, to_messages

PY_INCLUDE = ("server/text_generation_server/",)
PY_EXCLUDE = (
    "server/text_generation_server/models/custom_modeling/",
    "server/text_generation_server/pb/",
)
RUST_DIRS = ("launcher/src", "router/src", "backends/v3/src")


def scan_rust(root: Path) -> list[tuple[str, str, str, int, str, str]]:
    """(text, style, file, line, level, function) for every message in the Rust sources
    (catalogs/rustsource.py's default forms: error/warn records, `#[error]`, panics,
    `.expect`, anyhow's macros)."""
    return rustsource.scan_rust(root, RUST_DIRS)


def extract(checkout: Path, release: str) -> list:
    from catalogs.core import Message

    root = release_root(checkout, release)
    messages = to_messages(scan(root, PY_INCLUDE, PY_EXCLUDE), "tgi", release)
    for text, style, file, line, level, function in scan_rust(root):
        found = Message("tgi", release, text, style, file, line, level, function)  # type: ignore[arg-type]
        messages.append(found)
    return messages
