"""The record every emitter's `extract.py` produces: one failure message as its source prints it.

`text` is the format string exactly as written in the source (C string literals already joined,
escape sequences such as \\n decoded); `style` says how its placeholders are written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Style = Literal["printf", "fmt", "brace", "fstring", "angle", "literal"]
STYLES: tuple[str, ...] = ("printf", "fmt", "brace", "fstring", "angle", "literal")


@dataclass(frozen=True, slots=True, order=True)
class Message:
    emitter: str
    release: str
    text: str
    style: Style
    file: str
    line: int
    level: str
    function: str = ""

    def __post_init__(self) -> None:
        if self.style not in STYLES:
            raise ValueError(f"style {self.style!r} is not one of {STYLES}")
