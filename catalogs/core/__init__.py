"""The catalog generator's core: shared by every emitter's folder under catalogs/."""

from catalogs.core.mapping import Decision, Mapping, load_mapping
from catalogs.core.message import Message, Style
from catalogs.core.pattern import Converted, Placeholder, Unsafe, convert, parse
from catalogs.core.render import render_line, render_message

__all__ = [
    "Converted",
    "Decision",
    "Mapping",
    "Message",
    "Placeholder",
    "Style",
    "Unsafe",
    "convert",
    "load_mapping",
    "parse",
    "render_line",
    "render_message",
]
