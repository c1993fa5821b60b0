"""How a reviewed mapping decides one C or C++ emitter's message, and what the compiled library
makes of a real line, for the mapping tests."""

from __future__ import annotations

import json
from pathlib import Path

from catalogs.core.mapping import Decision, load_mapping
from catalogs.core.message import Message
from denpex.match.scan import Matcher

CATALOGS = Path(__file__).resolve().parents[2] / "catalogs"
RULES = Path(__file__).resolve().parents[2] / "rules"


def decide(emitter: str, text: str, level: str, file: str) -> Decision:
    """The decision of `emitter`'s mapping.yaml on a message as its extractor reads it: a printf
    format when it holds a conversion, a literal otherwise."""
    mapping = load_mapping(CATALOGS / emitter / "mapping.yaml")
    style = "printf" if "%" in text else "literal"
    return mapping.decide(Message(emitter, "x", text, style, file, 1, level, ""))


def catalog_hits(matcher: Matcher, text: str, family: str) -> list:
    """`family`'s signatures that match `text`, also where a signature of higher priority is the
    one the line reports (the scanner keeps the highest on a line)."""
    return [m for m in matcher.scan_text(text, keep_all=True) if m.signature.family == family]


def assert_catalog_reads(matcher: Matcher, text: str, family: str, failure_class: str) -> None:
    """A signature of `family` matches the real line `text` (whichever the line reports), and
    one of them says its class."""
    hits = catalog_hits(matcher, text, family)
    assert hits, f"no {family} signature matched"
    assert failure_class in {m.signature.failure_class for m in hits}


def assert_emitter_class(matcher: Matcher, text: str, family: str, failure_class: str) -> None:
    """A signature of `family` matches the real line `text`, and one of them says its class."""
    hits = [m for m in matcher.scan_text(text) if m.signature.family == family]
    assert hits, f"no {family} signature matched"
    assert failure_class in {m.signature.failure_class for m in hits}


def assert_mapped(emitter: str, text: str, level: str, file: str, failure_class: str) -> None:
    """The emitter's mapping files the message as a failure of `failure_class`."""
    decision = decide(emitter, text, level, file)
    assert decision.disposition == "mapped"
    assert decision.failure_class == failure_class


def pinned_lines(family: str) -> list[tuple[str, int]]:
    """Each release line a generated family's CATALOG.json records, with its signatures' count."""
    accounting = json.loads((RULES / family / "CATALOG.json").read_text())
    return [(row["line"], row["signatures"]) for row in accounting["releases"]]


def write_source(root: Path, relative: str, text: str) -> None:
    """Write one source file of a fake checkout for an extractor test."""
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
