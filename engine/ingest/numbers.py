"""Numbers read from untrusted text: ranks, local ranks, pids, sequence numbers, steps.

Consumes the digits a pattern captured; produces an int, or None when the text is not a number
a real job could print. Python refuses to convert more than 4,300 digits and a rank of 10^30
would size every per-rank table, so anything longer than `MAX_DIGITS` is not an identifier.
"""

from __future__ import annotations

MAX_DIGITS = 12
"""10^12 is past every rank, pid, sequence number and step a real job prints."""


def identifier(text: str | bytes | None) -> int | None:
    """The value of a short run of ASCII digits (an optional leading minus), else None."""
    if text is None:
        return None
    digits = text.lstrip(b"-" if isinstance(text, bytes) else "-")
    if not digits or len(digits) > MAX_DIGITS or not digits.isdigit() or not digits.isascii():
        return None
    return int(text)
