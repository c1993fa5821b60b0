"""From the messages of every pinned release to signatures and accounting.

Consumes the messages `extract.py` found per release line, the emitter's source.yaml and its
reviewed mapping, and the hand-written library; produces a `Catalog`: one entry per distinct
message with its disposition (mapped / context / excluded, with the reason), and one signature
per distinct pattern, carrying the release range that prints it and an example rendered from
its own format string. A message a hand-written signature already matches is mapped to that
signature and generates nothing: hand-written signatures stay the ones that fire.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Collection, Sequence
from collections.abc import Mapping as MappingType
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from catalogs.core.mapping import Decision, Mapping
from catalogs.core.message import Message
from catalogs.core.pattern import (
    Converted,
    Placeholder,
    Unsafe,
    compile_problems,
    convert,
    opening,
    shared_pattern,
)
from catalogs.core.render import ValueRule, render_line, render_values, value_rules
from catalogs.core.source import SourceSpec
from denpex.match.scan import Matcher
from denpex.signatures.signature import Signature
from denpex.taxonomy import classes

CATALOG_PRIORITY = 20
"""Every generated signature's priority: above the hand-written generic fallbacks (<= 10, e.g.
any uncaught exception) and below every specific hand-written signature (>= 30)."""

MAX_TITLE = 110

REWORDING_SHARE = 0.5
PYTHON_WORDINGS = Path(__file__).with_name("python_wordings.txt")
"""Two wordings of a message (in different releases) share one signature only when the text
they print alike is at least this share of each one's literal text."""


@dataclass
class Entry:
    """One distinct message (format text and style) across the release lines that print it."""

    text: str
    style: str
    level: str
    function: str
    where: dict[str, tuple[str, int]] = field(default_factory=dict)
    """release line -> (file, line)"""
    disposition: str = "excluded"
    reason: str | None = None
    decision: Decision | None = None
    converted: Converted | None = None
    signature: str | None = None
    """the generated signature's id, or the hand-written one that already matches it"""
    rendered: str | None = None
    values: list[tuple[int, int, int]] = field(default_factory=list)
    """where the rendered line's filled values lie: (piece index, start, end)"""
    captures: dict[str, str] = field(default_factory=dict)
    reworded: bool = False
    """its pattern is the part it shares with other wordings of the message (`merge_rewordings`)"""
    opening: Converted | None = None
    """a multi-line message's first line, matched beside its most distinctive one (`opening`)"""
    opening_rendered: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.text, self.style)

    def latest(self, lines: Sequence[str]) -> tuple[str, str, int]:
        line = next(name for name in reversed(lines) if name in self.where)
        return (line, *self.where[line])

    def message(self, lines: Sequence[str], emitter: str) -> Message:
        release, file, number = self.latest(lines)
        return Message(
            emitter,
            release,
            self.text,
            self.style,
            file,
            number,
            self.level,
            self.function,  # type: ignore[arg-type]
        )


@dataclass
class Catalog:
    emitter: str
    family: str
    lines: list[str]
    refs: dict[str, str]
    entries: list[Entry]
    signatures: list[dict[str, Any]]


_SEVERITY = {
    "TRACE": 0,
    "DEBUG": 1,
    "INFO": 2,
    "NOTICE": 3,
    "WARN": 4,
    "WARNING": 4,
    "ERROR": 5,
    "CRITICAL": 6,
    "FATAL": 6,
}


def _severity(level: str) -> float:
    """Where a level stands among the usual ones; a level of the emitter's own naming sits
    between a warning and an error, so two such levels keep the later call site's."""
    return _SEVERITY.get(level.upper(), 4.5)


def merge_releases(found: MappingType[str, Sequence[Message]], lines: Sequence[str]) -> list[Entry]:
    """Distinct messages with where each release prints them (the first call site per line)."""
    entries: dict[tuple[str, str], Entry] = {}
    for line in lines:
        for message in sorted(found.get(line, ()), key=lambda m: (m.file, m.line, m.text)):
            entry = entries.setdefault(
                (message.text, message.style),
                Entry(message.text, message.style, message.level, message.function),
            )
            entry.where.setdefault(line, (message.file, message.line))
            # The same text printed at two levels (NCCL's CUCHECK WARNs "Cuda failure %d '%s'",
            # its CUCHECKIGNORE INFOs it) is the failure report at the more severe one.
            if _severity(message.level) >= _severity(entry.level):
                entry.level = message.level
            entry.function = message.function or entry.function
    return sorted(entries.values(), key=lambda e: e.key)


def release_range(present: Sequence[str], lines: Sequence[str]) -> str:
    """The release lines that print a message, as ranges over the pinned lines (oldest first):
    ">=2.18,<=2.27", "==2.21", or runs joined by " || " when a line in between dropped it."""
    runs: list[list[str]] = []
    previous = -2
    for index, line in enumerate(lines):
        if line not in present:
            continue
        if index == previous + 1 and runs:
            runs[-1].append(line)
        else:
            runs.append([line])
        previous = index
    return " || ".join(
        f"=={run[0]}" if len(run) == 1 else f">={run[0]},<={run[-1]}" for run in runs
    )


def _slug(converted: Converted) -> str:
    literal = " ".join(p for p in converted.pieces if isinstance(p, str))
    words = re.findall(r"[a-z0-9]+", literal.lower())
    slug = "_".join(words)[:40].strip("_") or "message"
    digest = hashlib.sha1(converted.regex.encode()).hexdigest()[:6]
    return f"{slug}_{digest}"


def _title(display: str, converted: Converted) -> str:
    parts: list[str] = []
    for piece in converted.pieces:
        if isinstance(piece, str):
            parts.append(piece.replace("{", "(").replace("}", ")"))
        else:
            parts.append(f"{{{piece.name}}}" if piece.name else "…")
    text = re.sub(r"\s+", " ", "".join(parts)).strip()
    text = re.sub(r"…(?:\W{0,2}…)+", "…", text)
    if len(text) > MAX_TITLE:
        cut = text[:MAX_TITLE]
        if cut.count("{") != cut.count("}"):
            cut = cut[: cut.rfind("{")]
        text = cut.rstrip() + "…"
    return f"{display}: {text}"


def classify(
    entries: list[Entry], spec: SourceSpec, mapping: Mapping, *, check_compiles: bool = True
) -> None:
    """Disposition, pattern and rendered example of every entry, in place. Without
    `check_compiles`, a pattern a backend refuses is kept (the rendered examples are the same;
    compiling a catalog's patterns with Hyperscan takes seconds)."""
    rules = value_rules([value.model_dump() for value in spec.render])
    for entry in entries:
        message = entry.message(spec.line_names(), spec.emitter)
        decision = mapping.decide(message)
        entry.decision = decision
        entry.disposition = decision.disposition
        entry.reason = decision.reason
        if decision.disposition != "mapped":
            continue
        try:
            entry.converted = convert(
                entry.text,
                entry.style,  # type: ignore[arg-type]
                spec.captures,
                spec.captures_after,
                spec.anchor_for(entry.level),
                spec.anchor_pattern_for(entry.level),
                spec.min_words_for(entry.level),
                spec.name_rules(),
            )
        except Unsafe as unsafe:
            entry.disposition, entry.reason = "excluded", str(unsafe)
            continue
        _render(entry, spec, rules, message)
        found = re.search(entry.converted.regex, entry.rendered, re.ASCII)
        if found is None or any(found.group(k) != v for k, v in entry.captures.items()):
            entry.disposition = "excluded"
            entry.reason = "generator: the pattern does not match its own rendered line"
            continue
        if spec.openings:
            _add_opening(entry, spec, rules, message)
    if not check_compiles:
        return
    problems = compile_problems(
        sorted(
            {e.converted.regex for e in entries if _live(e)}
            | {e.opening.regex for e in entries if _live(e) and e.opening is not None}
        )
    )
    for entry in entries:
        if _live(entry) and entry.converted.regex in problems:  # type: ignore[union-attr]
            entry.disposition = "excluded"
            entry.reason = problems[entry.converted.regex]  # type: ignore[union-attr]
        elif entry.opening is not None and entry.opening.regex in problems:
            entry.opening = entry.opening_rendered = None


def _add_opening(
    entry: Entry, spec: SourceSpec, rules: Sequence[ValueRule], message: Message
) -> None:
    """The entry's opening-line pattern and its rendered example, when the message has one that
    is specific alone and matches its own rendered line."""
    found = opening(
        entry.text,
        entry.style,  # type: ignore[arg-type]
        spec.captures,
        spec.captures_after,
        spec.min_words_for(entry.level),
        spec.name_rules(),
    )
    if found is None:
        return
    text, _, _ = render_values(found.line, rules)
    rendered = render_line(spec.template_for(message.level), message, text, spec.file_prefix)
    if re.search(found.regex, rendered, re.ASCII) is None:
        return
    entry.opening, entry.opening_rendered = found, rendered


def _render(
    entry: Entry,
    spec: SourceSpec,
    rules: Sequence[ValueRule],
    message: Message,
    plain: Collection[int] = (),
) -> None:
    """The entry's example line, its captures and where its filled values lie in the line."""
    assert entry.converted is not None
    text, values, spans = render_values(entry.converted.line, rules, plain)
    entry.captures = {k: v for k, v in values.items() if k in entry.converted.captures}
    template = spec.template_for(message.level)
    entry.rendered = render_line(template, message, text, spec.file_prefix)
    # where the message starts: the template's text before it, rendered
    before = render_line(template.split("{message}")[0], message, "", spec.file_prefix)
    entry.values = [(index, len(before) + a, len(before) + b) for index, a, b in spans]


def _live(entry: Entry) -> bool:
    return entry.disposition == "mapped" and entry.converted is not None and not entry.signature


def merge_rewordings(entries: list[Entry], spec: SourceSpec) -> None:
    """Messages a release reworded share one pattern, in place.

    Live entries are wordings of one message when no pinned line prints two of them, the same
    mapping rule decided them (same level), and one contains the other whole or they differ
    only in a leading tag, sharing at least `REWORDING_SHARE` of each, specific enough alone
    (`shared_pattern`). Each then takes that shared pattern, so one signature matches every
    wording, with the releases of all; other wordings keep their own signatures."""
    order = {line: index for index, line in enumerate(spec.line_names())}
    groups: dict[tuple[str, str], list[Entry]] = {}
    for entry in entries:
        if _live(entry) and entry.decision is not None:
            groups.setdefault((entry.decision.rule, entry.level), []).append(entry)
    for members in groups.values():
        members.sort(key=lambda e: (min(order[line] for line in e.where), e.key))
        clusters: list[tuple[list[Entry], Converted]] = []
        for entry in members:
            # Join the cluster whose wordings share the most text with this one, if any.
            best: tuple[int, int, Converted] | None = None
            for index, (cluster, _) in enumerate(clusters):
                if any(line in entry.where for member in cluster for line in member.where):
                    continue
                merged = _shared([*cluster, entry])
                size = sum(len(p) for p in merged.pieces if isinstance(p, str)) if merged else 0
                if merged is not None and (best is None or size > best[0]):
                    best = (size, index, merged)
            if best is None:
                clusters.append(([entry], entry.converted))  # type: ignore[arg-type]
            else:
                _, index, merged = best
                clusters[index] = ([*clusters[index][0], entry], merged)
        for cluster, shared in clusters:
            if len(cluster) < 2:
                continue
            for member in cluster:
                member.converted = shared
                member.captures = {
                    name: value
                    for name, value in member.captures.items()
                    if name in shared.captures
                }
                member.reworded = True


@cache
def python_wordings() -> tuple[str, ...]:
    """The lines the interpreter itself prints for builtin failures (`python_wordings.txt`)."""
    text = PYTHON_WORDINGS.read_text(encoding="utf-8")
    return tuple(line for line in text.splitlines() if line.strip() and not line.startswith("#"))


def exclude_python_wordings(entries: list[Entry]) -> None:
    """Entries whose pattern matches a line Python itself prints are excluded, in place.

    A library that mimics a builtin message (a lazy module's `__getattr__` raising "module
    {name!r} has no attribute {attr!r}") prints the interpreter's own words: its signature would
    fire on every program's AttributeError and name the library as the emitter. Mapping rules
    catch the plain spellings; this catches every spelling, whatever the format looks like."""
    lines = python_wordings()
    for entry in entries:
        if not _live(entry):
            continue
        pattern = re.compile(entry.converted.regex, re.ASCII)  # type: ignore[union-attr]
        spoken = next((line for line in lines if pattern.search(line)), None)
        if spoken is not None:
            entry.disposition = "excluded"
            entry.reason = f"matches what Python itself prints ({spoken!r}): it names no emitter"


def _shared(wordings: list[Entry]) -> Converted | None:
    """The pattern every wording's own rendered line matches, with the same captures."""
    try:
        shared = shared_pattern([e.converted for e in wordings], REWORDING_SHARE)  # type: ignore[misc]
    except Unsafe:
        return None
    compiled = re.compile(shared.regex, re.ASCII)
    for entry in wordings:
        found = compiled.search(entry.rendered or "")
        if found is None or any(
            found.group(name) != entry.captures.get(name) for name in shared.captures
        ):
            return None
    return shared


def mark_hand_written(
    entries: list[Entry], hand: Matcher | None, spec: SourceSpec, claimant: str = "hand-written"
) -> None:
    """Entries whose message text a specific hand-written signature already claims map to it.

    `claimant` names the signatures in the reason: "hand-written", or the catalog families of
    `spec.covered_by` (an emitter's fork keeps the signatures of the messages it kept).

    A generic fallback (any uncaught exception: priority <= 10) claims no message: on the line
    the emitter's own catalogued message outranks it, so the message keeps its signature.

    A claim that lies wholly inside one value the generator filled in (a CUDA error string
    that nccl-tests quotes, matched by a hand-written CUDA signature) covers the lines with
    that value, not the message: the entry keeps its own signature, and its example line gets
    a value there that says nothing, so that it is a line its own signature wins."""
    if hand is None:
        return
    rules = value_rules([value.model_dump() for value in spec.render])
    lines = spec.line_names()
    for entry in entries:
        if not _live(entry) or entry.rendered is None:
            continue
        winners: list[str] = []
        held: set[int] = set()
        for match in hand.scan_text(entry.rendered):
            if match.signature.fallback:
                continue
            values = _values_holding(match.signature, entry.rendered, entry.values)
            if values:
                held |= values
            else:
                winners.append(match.signature.id)
        if winners:
            entry.signature = sorted(winners)[0]
            entry.reason = f"covered by {claimant} {', '.join(sorted(set(winners)))}"
        elif held:
            _render(entry, spec, rules, entry.message(lines, spec.emitter), plain=held)
        if entry.opening_rendered is not None and any(
            not match.signature.fallback for match in hand.scan_text(entry.opening_rendered)
        ):
            # the opening line is another signature's to read: the message keeps its own line
            entry.opening = entry.opening_rendered = None


def _values_holding(
    signature: Signature, line: str, values: list[tuple[int, int, int]]
) -> set[int]:
    """The filled values that hold every match of the signature's patterns in the line (none
    when a match reaches into the message's own text)."""
    held: set[int] = set()
    for pattern in signature.patterns:
        flags = re.IGNORECASE if pattern.caseless else 0
        for found in re.finditer(pattern.regex, line, flags):
            holder = next(
                (index for index, a, b in values if a <= found.start() and found.end() <= b),
                None,
            )
            if holder is None:
                return set()
            held.add(holder)
    return held


def _openings(groups: Sequence[tuple[str, list[Entry]]]) -> dict[str, list[Entry]]:
    """Signature pattern -> the wordings whose opening lines it matches as well (one per
    distinct opening among the messages that share the pattern: help texts that differ in their
    first line and end alike, "The call to cuIpcGetMemHandle failed." and "The call to
    cuDeviceCanAccessPeer failed." over the same hint), kept only when no other signature's
    pattern or opening is the same line: an opening shared by several signatures would not say
    which was printed."""
    chosen: dict[str, list[Entry]] = {}
    for regex, members in groups:
        seen: set[str] = set()
        for member in members:
            if member.opening is None or member.opening.regex in seen | {regex}:
                continue
            seen.add(member.opening.regex)
            chosen.setdefault(regex, []).append(member)
    uses = Counter(regex for regex, _ in groups)
    uses.update(e.opening.regex for entries in chosen.values() for e in entries if e.opening)
    kept = {
        regex: [e for e in entries if e.opening is not None and uses[e.opening.regex] == 1]
        for regex, entries in chosen.items()
    }
    return {regex: entries for regex, entries in kept.items() if entries}


def build_signatures(
    entries: list[Entry], spec: SourceSpec, mapping: Mapping, refs: MappingType[str, str]
) -> list[dict[str, Any]]:
    """One signature per distinct pattern; entries learn their signature's id."""
    lines = spec.line_names()
    groups: dict[str, list[Entry]] = {}
    for entry in entries:
        if _live(entry):
            groups.setdefault(entry.converted.regex, []).append(entry)  # type: ignore[union-attr]
    ordered = sorted(groups.items(), key=lambda item: _slug(item[1][0].converted))  # type: ignore[arg-type]
    rendered = [members[0].rendered or "" for _, members in ordered]
    openings = _openings(ordered)
    signatures: list[dict[str, Any]] = []
    display = mapping.display or spec.emitter
    order = {line: index for index, line in enumerate(lines)}
    for index, (regex, members) in enumerate(ordered):
        # The newest wording is the signature's source; members of one release keep text order.
        first = min(members, key=lambda m: -max(order[line] for line in m.where))
        converted = first.converted
        decision = first.decision
        assert converted is not None and decision is not None and decision.failure_class
        sig_id = f"{mapping.family}.{_slug(converted)}"
        for member in members:
            member.signature = sig_id
        present = {line for member in members for line in member.where}
        release, file, number = first.latest(lines)
        compiled = re.compile(regex, re.ASCII)
        leads = [lead.opening.regex for lead in openings.get(regex, []) if lead.opening]
        leads_compiled = [re.compile(lead, re.ASCII) for lead in leads]
        neighbours = [
            text
            for text in rendered[index + 1 :] + rendered[:index]
            if text
            and not compiled.search(text)
            and not any(lead.search(text) for lead in leads_compiled)
        ]
        example: dict[str, Any] = {"line": first.rendered}
        if first.captures:
            example["captures"] = dict(sorted(first.captures.items()))
        example["rendered"] = True
        wordings = [
            {
                "line": m.rendered,
                **({"captures": dict(sorted(m.captures.items()))} if m.captures else {}),
                "rendered": True,
            }
            for m in members
            if m.reworded and m is not first and m.rendered != first.rendered
        ]
        wordings += [
            {"line": lead.opening_rendered, "rendered": True} for lead in openings.get(regex, [])
        ]
        real = _real_examples(compiled, mapping)
        source_link = _link(
            spec.repo, refs.get(release, ""), file, None if spec.excerpts else number
        )
        where = f"{file} ({first.function})" if first.function else file
        signatures.append(
            {
                "id": sig_id,
                "title": _title(display, converted),
                "status": "test",
                "origin": "catalog",
                "emitter": spec.emitter,
                "releases": release_range(sorted(present), lines),
                "failure_class": decision.failure_class,
                "category": str(classes()[decision.failure_class].category),
                "role": str(decision.role),
                "confidence": decision.confidence,
                "priority": CATALOG_PRIORITY,
                "patterns": [{"regex": regex}, *({"regex": lead} for lead in leads)],
                "meaning": decision.meaning
                or (
                    f"{display} logs this {first.level} from {where} when that code path "
                    f"fails; the class comes from the reviewed mapping ({decision.rule})."
                ),
                "caveat": decision.caveat,
                "next_steps": list(decision.next_steps) if str(decision.role) != "context" else [],
                "owner": str(decision.owner),
                "references": sorted(
                    {*mapping.references, *([source_link] if source_link else [])}
                ),
                "source": {"file": file, "line": number, "format": first.text},
                "examples": {
                    "match": [example, *wordings, *real],
                    "no_match": [neighbours[0] if neighbours else _fallback(spec, first, lines)],
                },
            }
        )
    return signatures


def _real_examples(compiled: re.Pattern[str], mapping: Mapping) -> list[dict[str, Any]]:
    """The mapping's real lines this signature matches, as match examples with their source."""
    examples: list[dict[str, Any]] = []
    for real in mapping.real_lines:
        found = compiled.search(real.line)
        if found is None:
            continue
        example: dict[str, Any] = {"line": real.line}
        captures = {k: v for k, v in found.groupdict().items() if v is not None}
        if captures:
            example["captures"] = dict(sorted(captures.items()))
        example["source"] = real.source
        examples.append(example)
    return examples


def _fallback(spec: SourceSpec, entry: Entry, lines: Sequence[str]) -> str:
    """With no neighbouring message to contrast, the prefix alone: a line the emitter prints
    with an empty message."""
    message = entry.message(lines, spec.emitter)
    return render_line(spec.template_for(message.level), message, "", spec.file_prefix).rstrip()


def _link(repo: str, ref: str, file: str, line: int | None) -> str | None:
    if repo.startswith("https://github.com/") and ref:
        anchor = f"#L{line}" if line is not None else ""
        return f"{repo.rstrip('/')}/blob/{ref}/{file}{anchor}"
    return None


def release_counts(catalog: Catalog) -> list[dict[str, Any]]:
    """Per release line: messages found, mapped, kept as context, excluded; signatures."""
    by_id = {s["id"]: s for s in catalog.signatures}
    rows = []
    for line in catalog.lines:
        present = [e for e in catalog.entries if line in e.where]
        generated = {
            e.signature for e in present if e.signature in by_id and e.disposition == "mapped"
        }
        rows.append(
            {
                "line": line,
                "ref": catalog.refs.get(line, ""),
                "found": len(present),
                "mapped": sum(e.disposition == "mapped" for e in present),
                "context": sum(e.disposition == "context" for e in present),
                "excluded": sum(e.disposition == "excluded" for e in present),
                "signatures": len(generated),
            }
        )
    return rows


def placeholder_names(converted: Converted) -> list[str]:
    return [p.name for p in converted.pieces if isinstance(p, Placeholder) and p.name]
