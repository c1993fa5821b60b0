"""Checks the signature library: schema, ids, both backends, pattern hygiene and examples.

Consumes a rules directory; produces a list of `Problem`s (empty when the library is clean).
`denpex rules lint` prints them; the test suite asserts there are none. Every example line is
run through the whole library in every available backend: a `match` example must be reported
by its signature with the captures it lists, and must not be claimed by a higher-priority
signature; a `no_match` example must not be reported by its signature; and the backends must
report the same matches (every signature, line and capture) on every example line.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from denpex.errors import RulesError
from denpex.events import Match
from denpex.match.scan import Matcher, confirmer_flags, confirmer_regex
from denpex.signatures.backends import PatternSpec, available_backends, make_scanner
from denpex.signatures.keywords import required_literals
from denpex.signatures.library import (
    Library,
    default_rules_dir,
    library_of,
    load_library,
    load_overlay,
    load_signature,
    signature_files,
)
from denpex.signatures.signature import MatchExample, Maturity, Role, Signature

# Names a template may use besides the captures: who the evidence is about, and the culprit
# inference's outputs.
KNOWN_PLACEHOLDERS = frozenset(
    {"rank", "local_rank", "host", "pid", "suspects", "seq", "failure_class"}
)
_LEADING_ANCHOR = re.compile(r"^\^(?!\|)")
_UNBOUNDED_TAIL = re.compile(r"(?<!\\)\.[*+]\)*$")


@dataclass(frozen=True, slots=True)
class Problem:
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


def _capture_names(signature: Signature) -> set[str]:
    # Compiled as the matchers' confirmers compile them (the names do not depend on the
    # flags), so the lint compiles each of 50,000 regexes once, not once here and once there.
    names: set[str] = set()
    for pattern in signature.patterns:
        flags = confirmer_flags(pattern.caseless)
        names |= set(confirmer_regex(pattern.regex, flags).groupindex)
        for nearby in pattern.nearby:
            names |= set(confirmer_regex(nearby.regex, flags).groupindex)
    return names


def _placeholders(template: str) -> set[str]:
    try:
        return {field for _, field, _, _ in string.Formatter().parse(template) if field}
    except ValueError:
        return {"<malformed template>"}


def _pattern_problems(signature: Signature) -> list[Problem]:
    problems: list[Problem] = []
    for index, pattern in enumerate(signature.patterns):
        where = f"{signature.id} pattern {index}"
        if _LEADING_ANCHOR.match(pattern.regex):
            problems.append(
                Problem(
                    where,
                    "starts with ^: launcher prefixes ([rank3]:, srun "
                    "labels) precede messages; use (?:^|\\]: ?) or no anchor",
                )
            )
        if _UNBOUNDED_TAIL.search(pattern.regex):
            problems.append(
                Problem(
                    where,
                    "ends in .* or .+ without $: Hyperscan reports every "
                    "end offset; end with $ or drop the tail",
                )
            )
        if not (pattern.keywords or required_literals(pattern.regex)):
            problems.append(
                Problem(
                    where,
                    "no literal of 4+ characters that every match "
                    "contains; list them under keywords",
                )
            )
    return problems


def _compile_problems(signatures: list[Signature]) -> list[Problem]:
    """Every pattern in every backend: all at once, and one by one only when that fails, to
    name the patterns a backend refuses."""
    problems: list[Problem] = []
    specs = [
        (f"{s.id} pattern {i}", PatternSpec(p.regex, p.caseless, ()))
        for s in signatures
        for i, p in enumerate(s.patterns)
    ]
    for backend in available_backends():
        try:
            make_scanner([spec for _, spec in specs], backend)
            continue
        except RulesError:
            pass
        for where, spec in specs:
            try:
                make_scanner([spec], backend)
            except RulesError as error:
                problems.append(Problem(where, f"{backend} backend: {error}"))
    return problems


def _template_problems(signature: Signature) -> list[Problem]:
    allowed = _capture_names(signature) | KNOWN_PLACEHOLDERS
    problems = []
    for text in [signature.title, signature.caveat, *signature.next_steps]:
        unknown = _placeholders(text) - allowed
        if unknown:
            problems.append(
                Problem(signature.id, f"template names unknown {sorted(unknown)}: {text[:60]!r}")
            )
    # A context line becomes a finding when processes differ (an agreement) or when a failure
    # follows what it announces (a class it stands for): then it says what next.
    if (
        signature.role is Role.context
        and signature.next_steps
        and signature.agreement is None
        and signature.failure_class is None
    ):
        problems.append(Problem(signature.id, "context signatures take no next_steps"))
    if signature.agreement is not None and not signature.next_steps:
        problems.append(Problem(signature.id, "an agreement needs next_steps for its finding"))
    return problems


def _keyword_problems(signature: Signature) -> list[Problem]:
    """Explicit keywords must occur in every example line their pattern matches."""
    problems = []
    for index, pattern in enumerate(signature.patterns):
        if not pattern.keywords:
            continue  # derived literals are required by construction
        regex = confirmer_regex(pattern.regex, confirmer_flags(pattern.caseless))
        for example in signature.examples.match:
            line = example.line.lower() if pattern.caseless else example.line
            wanted = [k.lower() for k in pattern.keywords] if pattern.caseless else pattern.keywords
            if regex.search(example.line) and not any(k in line for k in wanted):
                problems.append(
                    Problem(
                        f"{signature.id} pattern {index}",
                        f"example matches but has none of {pattern.keywords}",
                    )
                )
    return problems


def scan_winners(matches: list[Match]) -> list[Match]:
    """Of all the signatures confirmed on each line (`scan_texts(keep_all=True)`), those a scan
    keeps: on each line, in each pattern group (context or not), the highest priority."""
    top: dict[tuple[bool, int], int] = {}
    for match in matches:
        key = (match.signature.role is Role.context, match.event.line)
        top[key] = max(top.get(key, match.signature.priority), match.signature.priority)
    return [
        m
        for m in matches
        if m.signature.priority == top[(m.signature.role is Role.context, m.event.line)]
    ]


def example_problems(
    library: Library,
    backend: str,
    cache_dir: Path | None = None,
    only: set[str] | None = None,
) -> list[Problem]:
    """Every example of every signature, run through the whole library in one backend.

    All examples go through the scanner in one batch (`Matcher.scan_texts`), so checking
    thousands of signatures costs a few passes, not one scan per example."""
    matcher = Matcher(library, backend, cache_dir)
    return _judge_examples(backend, _scan_examples(library, matcher, only))


class _ExampleScan(NamedTuple):
    """The library's examples, each with its owner (`None` for a no_match line), and what one
    backend found in each, every signature kept."""

    owners: list[tuple[Signature, MatchExample | None]]
    texts: list[str]
    found: list[list[Match]]


def _scan_examples(
    library: Library, matcher: Matcher, only: set[str] | None = None
) -> _ExampleScan:
    owners: list[tuple[Signature, MatchExample | None]] = []
    texts: list[str] = []
    for signature in library.signatures:
        if only is not None and signature.id not in only:
            continue
        for example in signature.examples.match:
            owners.append((signature, example))
            texts.append(example.line)
        for line in signature.examples.no_match:
            owners.append((signature, None))
            texts.append(line)
    return _ExampleScan(owners, texts, matcher.scan_texts(texts, keep_all=True))


def _judge_examples(backend: str, scan: _ExampleScan) -> list[Problem]:
    winning = [scan_winners(found) for found in scan.found]  # no second scan in either backend
    problems: list[Problem] = []
    for (signature, example), text, all_hits, winners in zip(
        scan.owners, scan.texts, scan.found, winning, strict=True
    ):
        where = f"{signature.id} [{backend}]"
        mine = [m for m in all_hits if m.signature.id == signature.id]
        if example is None:
            if mine:
                problems.append(Problem(where, f"no_match example matched: {text[:90]!r}"))
            continue
        if not mine:
            problems.append(Problem(where, f"match example not matched: {text[:90]!r}"))
            continue
        for name, expected in example.captures.items():
            got = mine[0].captures.get(name)
            if got != expected:
                problems.append(
                    Problem(
                        where,
                        f"capture {name}={got!r}, expected {expected!r} in {text[:60]!r}",
                    )
                )
        winner_ids = {m.signature.id for m in winners}
        if signature.id not in winner_ids:
            problems.append(
                Problem(
                    where,
                    f"example is claimed by higher-priority {sorted(winner_ids)}: {text[:70]!r}",
                )
            )
    return problems


MatchKey = tuple[str, int, tuple[tuple[str, str], ...]]


def match_keys(found: list[Match]) -> list[MatchKey]:
    """What a scan reported, in a form two backends' reports compare by: signature, line and
    captures, in the scan's order."""
    return [(m.signature.id, m.event.line, tuple(sorted(m.captures.items()))) for m in found]


def backend_disagreements(
    texts: list[str], found_by: dict[str, list[list[Match]]]
) -> list[Problem]:
    """Texts on which the backends report different matches (any signature, not only the
    text's owner): a pattern the two regex dialects read differently shows here first."""
    problems: list[Problem] = []
    (first, first_found), *others = found_by.items()
    for backend, found in others:
        for text, mine, theirs in zip(texts, first_found, found, strict=True):
            if match_keys(mine) != match_keys(theirs):
                ids = sorted({key[0] for key in {*match_keys(mine)} ^ {*match_keys(theirs)}})
                problems.append(Problem(f"{first} vs {backend}", f"differ on {ids}: {text[:70]!r}"))
    return problems


def lint(
    rules_dir: Path | None = None,
    cache_dir: Path | None = None,
    overlay_dir: Path | None = None,
) -> list[Problem]:
    """With `cache_dir`, the parsed library and compiled databases are taken from (and kept
    in) the cache under the library's digest, as a diagnosis does. With `overlay_dir`, the
    deployment's overlay is checked together with the library it is loaded on."""
    rules_dir = rules_dir or default_rules_dir()
    problems: list[Problem] = []
    try:
        library = _linted_library(rules_dir, cache_dir, overlay_dir)
    except RulesError as error:
        for folder in [rules_dir, *([overlay_dir] if overlay_dir else [])]:
            for path in signature_files(folder):  # name every file that does not load
                try:
                    load_signature(path, folder)
                except RulesError as problem:
                    problems.append(Problem(str(path.relative_to(folder)), str(problem)))
        return problems or [Problem(str(overlay_dir or rules_dir), str(error))]
    signatures = list(library.signatures)
    problems += _hygiene_problems(signatures)
    if problems:
        return problems + _compile_problems(signatures)
    # The matchers the examples are scanned with compile every pattern in every backend: only
    # when one cannot be built are the patterns compiled again, to name those refused.
    try:
        matchers = {
            backend: Matcher(library, backend, cache_dir) for backend in available_backends()
        }
    except RulesError:
        problems = _compile_problems(signatures)
        if not problems:
            raise
        return problems
    scans = {backend: _scan_examples(library, matcher) for backend, matcher in matchers.items()}
    for backend, scan in scans.items():
        problems += _judge_examples(backend, scan)
    texts = next(iter(scans.values())).texts
    problems += backend_disagreements(
        texts, {backend: scan.found for backend, scan in scans.items()}
    )
    return problems


def _linted_library(rules_dir: Path, cache_dir: Path | None, overlay_dir: Path | None) -> Library:
    """Every signature lint checks: the library a diagnosis loads, then the experimental
    signatures and the overlay's added after it. A matcher compiles what is added apart
    (`Library.added_from`), so the whole library's compiled databases are the ones `denpex
    diagnose` and `denpex eval` read from the same cache, not a second compile of 50,000
    patterns that differs from theirs by a few."""
    library = load_library(rules_dir, include_experimental=True, cache_dir=cache_dir)
    experimental = [s for s in library.signatures if s.status is Maturity.experimental]
    added, label = list(experimental), None
    if overlay_dir is not None and (overlay_dir / "VERSION").is_file():
        overlay = load_overlay(overlay_dir, include_experimental=True)
        added += overlay.signatures
        label = overlay.label
    if not added:
        return library
    return library.without(s.id for s in experimental).with_signatures(added, label)


def _hygiene_problems(signatures: list[Signature]) -> list[Problem]:
    """Each signature's own hygiene (patterns, templates, keywords)."""
    problems: list[Problem] = []
    for signature in signatures:
        problems += _pattern_problems(signature)
        problems += _template_problems(signature)
        problems += _keyword_problems(signature)
    return problems


def _signature_problems(signatures: list[Signature]) -> list[Problem]:
    """Each signature's own hygiene, and that all compile."""
    return _hygiene_problems(signatures) + _compile_problems(signatures)


def lint_added(
    library: Library, added: list[Signature], matcher: Matcher | None = None
) -> list[Problem]:
    """What `lint` would say about `library` plus `added`, checked where adding can break it:
    the added signatures' schema, hygiene, compilation and examples, a match example a
    higher-priority signature of the library claims, and every example of the library a
    higher-priority added signature would now claim. The library itself is taken as clean
    (`denpex rules lint` keeps it so): this costs seconds where a full lint costs a minute.
    `matcher`: the library compiled (the backends agree, `tests/match`), else compiled here."""
    problems: list[Problem] = []
    try:
        library.with_signatures(added)
    except RulesError as error:
        return [Problem(added[0].id if added else "overlay", str(error))]
    problems += _signature_problems(added)
    if problems:
        return problems
    for backend in available_backends():
        problems += example_problems(library_of(added), backend)
        problems += _claimed_examples(library, added, backend)
    compiled = matcher or Matcher(library)
    problems += _claimed_by_library(compiled, added, compiled.backend)
    return problems


def _claimed_by_library(matcher: Matcher, added: list[Signature], backend: str) -> list[Problem]:
    """Match examples of an added signature that a higher-priority library signature claims."""
    owners = [(s, e) for s in added for e in s.examples.match]
    problems: list[Problem] = []
    winners = matcher.scan_texts([e.line for _, e in owners])
    for (owner, example), found in zip(owners, winners, strict=True):
        stronger = sorted({m.signature.id for m in found if m.signature.priority > owner.priority})
        if stronger:
            problems.append(
                Problem(
                    f"{owner.id} [{backend}]",
                    f"example is claimed by higher-priority {stronger}: {example.line[:70]!r}",
                )
            )
    return problems


def _claimed_examples(library: Library, added: list[Signature], backend: str) -> list[Problem]:
    """Match examples of the library that an added signature of higher priority now claims."""
    matcher = Matcher(library_of(added), backend)
    owners = [(s, e) for s in library.signatures for e in s.examples.match]
    problems: list[Problem] = []
    hits = matcher.scan_texts([e.line for _, e in owners], keep_all=True)
    for (owner, example), found in zip(owners, hits, strict=True):
        for match in found:
            if match.signature.priority > owner.priority:
                problems.append(
                    Problem(
                        f"{match.signature.id} [{backend}]",
                        f"claims the match example of {owner.id}: {example.line[:70]!r}",
                    )
                )
    return problems
