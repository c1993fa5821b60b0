"""How a reviewed mapping decides one C or C++ emitter's message, for the mapping tests."""

from __future__ import annotations

from pathlib import Path

from catalogs.core.mapping import Decision, load_mapping
from catalogs.core.message import Message

CATALOGS = Path(__file__).resolve().parents[2] / "catalogs"


def decide(emitter: str, text: str, level: str, file: str) -> Decision:
    """The decision of `emitter`'s mapping.yaml on a message as its extractor reads it: a printf
    format when it holds a conversion, a literal otherwise."""
    mapping = load_mapping(CATALOGS / emitter / "mapping.yaml")
    style = "printf" if "%" in text else "literal"
    return mapping.decide(Message(emitter, "x", text, style, file, 1, level, ""))
