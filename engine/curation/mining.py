"""Template mining with Drain3: lines that differ only in their variable parts share a template.

Consumes raw log lines (launcher prefixes are split off first); produces Drain3 templates, the
cluster each line falls in, and, for a template, a regular expression with a named capture for
each variable part (named after the words before it: `Required: <NUM>` becomes
`(?P<required>...)`), ready for a signature pattern.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from drain3 import TemplateMiner
from drain3.masking import MaskingInstruction
from drain3.template_miner_config import TemplateMinerConfig

from denpex.ingest.attribution import split_prefixes

# What a variable part looks like, per mask; the regex a capture of that kind accepts.
_MASKS: tuple[tuple[str, str, str], ...] = (
    ("TIME", r"\d{4}-\d{2}-\d{2}[T _]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?", r"[\d:T .,-]+"),
    ("URL", r"\b[a-z][a-z0-9+.-]*://[^\s'\"<>]+", r"\S+"),
    ("IP", r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b", r"[\d.:]+"),
    ("PATH", r"(?:(?<=[\s'\"(\[=])|^)(?:/[\w.@+~-]+)+/?", r"\S+"),
    ("HEX", r"\b0[xX][0-9a-fA-F]+\b", r"0[xX][0-9a-fA-F]+"),
    ("NUM", r"(?<![A-Za-z0-9_.])[-+]?\d+(?:\.\d+)?(?![A-Za-z0-9_])", r"[-+]?\d+(?:\.\d+)?"),
)
_CAPTURE = {name: capture for name, _, capture in _MASKS}
_GENERIC = r"\S+"
_PLACEHOLDER = re.compile(r"<(\*|[A-Z]+)>")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_BREAK = re.compile(r"[,;.()\[\]{}=|]")
SIMILARITY = 0.5
"""Drain's similarity threshold: half the tokens equal puts two lines in one cluster."""


def message(line: str) -> str:
    """The line without launcher prefixes (`[rank3]:`, `host:pid:tid [dev]`, srun labels)."""
    return split_prefixes(line).message.strip()


def new_miner() -> TemplateMiner:
    config = TemplateMinerConfig()
    config.masking_instructions = [MaskingInstruction(pattern, name) for name, pattern, _ in _MASKS]
    config.drain_sim_th = SIMILARITY
    config.parametrize_numeric_tokens = True
    config.profiling_enabled = False
    return TemplateMiner(config=config)


@dataclass(frozen=True)
class Mined:
    template: str
    cluster: int
    lines: tuple[str, ...]


def mine(lines: Sequence[str]) -> list[Mined]:
    """The templates of `lines` (messages only), most frequent first, with their lines."""
    miner = new_miner()
    clusters: dict[int, list[str]] = {}
    for line in lines:
        text = message(line)
        if text:
            clusters.setdefault(miner.add_log_message(text)["cluster_id"], []).append(line)
    templates = {c.cluster_id: c.get_template() for c in miner.drain.clusters}
    return sorted(
        (Mined(templates[cid], cid, tuple(found)) for cid, found in clusters.items()),
        key=lambda m: -len(m.lines),
    )


@dataclass(frozen=True)
class PatternDraft:
    regex: str
    captures: tuple[str, ...]
    title: str
    """The template with its variable parts as `{capture}` placeholders (a signature title)."""


def _capture_name(before: str, taken: set[str]) -> str:
    clause = _BREAK.split(before)[-1]
    words = [w.lower() for w in _WORD.findall(clause)][-2:]
    name = "_".join(words) or "value"
    if not name.isidentifier():
        name = "value"
    unique, n = name, 2
    while unique in taken:
        unique, n = f"{name}_{n}", n + 1
    taken.add(unique)
    return unique


def _literal(text: str) -> str:
    """`text` matched exactly, except that a run of spaces matches any run of whitespace."""
    parts = re.split(r"(\s+)", text)
    return "".join(r"\s+" if part.isspace() else re.escape(part) for part in parts if part)


def template_pattern(template: str) -> PatternDraft:
    """A signature pattern for a Drain3 template: literal parts escaped, each variable part a
    named capture of its kind (`<*>`: any run of non-space characters)."""
    regex: list[str] = []
    title: list[str] = []
    taken: set[str] = set()
    position = 0
    for found in _PLACEHOLDER.finditer(template):
        literal = template[position : found.start()]
        regex.append(_literal(literal))
        title.append(literal.replace("{", "{{").replace("}", "}}"))
        name = _capture_name(template[: found.start()], taken)
        regex.append(f"(?P<{name}>{_CAPTURE.get(found.group(1), _GENERIC)})")
        title.append("{" + name + "}")
        position = found.end()
    tail = template[position:]
    regex.append(_literal(tail))
    title.append(tail.replace("{", "{{").replace("}", "}}"))
    return PatternDraft("".join(regex), tuple(sorted(taken)), "".join(title).strip())


def clusters_of(texts: Iterable[Sequence[str]]) -> list[set[int]]:
    """For each group of lines (an incident's), the Drain3 clusters its lines fall in, mined
    over all groups together."""
    miner = new_miner()
    found: list[set[int]] = []
    for lines in texts:
        ids = set()
        for line in lines:
            text = message(line)
            if text:
                ids.add(miner.add_log_message(text)["cluster_id"])
        found.append(ids)
    return found
