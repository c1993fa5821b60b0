"""Masks the variable parts of a log line, Drain3-style, so equal events read the same.

Consumes one raw log line; produces its template: launcher prefixes removed, and times, URLs,
UUIDs, IP addresses, paths, hex values, known host names and standalone numbers replaced by
placeholders. Masking happens before embedding, so two ranks printing the same failure with
different pids, ports and sizes give the same template and the same vector.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from denpex.ingest.attribution import split_prefixes

MAX_TEMPLATE = 400

_MASKS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), placeholder)
    for pattern, placeholder in (
        # Times first: their digits and colons would otherwise become numbers and addresses.
        (r"\d{4}-\d{2}-\d{2}[T _]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?", "<TIME>"),
        (r"(?<![A-Za-z])[IWEF]\d{3,4} \d{2}:\d{2}:\d{2}(?:\.\d+)?", "<TIME>"),
        (
            r"\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) {1,2}\d{1,2} \d{2}:\d{2}:\d{2}",
            "<TIME>",
        ),
        (r"\b\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\b", "<TIME>"),
        (r"^\[\s*\d+\.\d+\]", "<TIME>"),
        (r"\b[a-z][a-z0-9+.-]*://[^\s'\"<>]+", "<URL>"),
        (
            r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b",
            "<UUID>",
        ),
        (r"\b[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?\b", "<PCI>"),
        (r"\[?\b(?:\d{1,3}\.){3}\d{1,3}\b\]?(?::\d+)?", "<IP>"),
        (r"\[?\b(?:[0-9a-fA-F]{1,4}:){2,7}[0-9a-fA-F]{1,4}\b\]?(?::\d+)?", "<IP>"),
        (r"(?:(?<=[\s'\"(\[=:])|^)(?:[A-Za-z]:)?(?:/[\w.@+~-]+)+/?", "<PATH>"),
        (r"\b[\w.-]+(?:/[\w.@+~-]+)+", "<PATH>"),
        (r"\b0[xX][0-9a-fA-F]+\b", "<HEX>"),
        (r"\b\d+(?:x\d+)+\b", "<DIMS>"),
        (r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{12,}\b", "<HEX>"),
        (
            r"(?:(?<=[^A-Za-z0-9<])|^)[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?=[^A-Za-z0-9>]|$)",
            "<NUM>",
        ),
    )
)
_SPACES = re.compile(r"\s+")


def mask(line: str, hosts: Iterable[str] = ()) -> str:
    """The template of `line`; `hosts` are names known to be hosts, masked as <HOST>."""
    text = split_prefixes(line).message
    for host in sorted({h for h in hosts if len(h) >= 3}, key=len, reverse=True):
        text = re.sub(rf"(?<![\w.-]){re.escape(host)}(?![\w-])", "<HOST>", text)
    for pattern, placeholder in _MASKS:
        text = pattern.sub(placeholder, text)
    text = _SPACES.sub(" ", text).strip()
    return text[:MAX_TEMPLATE]
