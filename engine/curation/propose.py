"""Drafts a signature from a confirmed incident's distinctive lines.

Consumes a confirmed incident (and the store's other incidents confirmed with the same class
that printed the same lines), the signature library, the taxonomy, the healthy logs and the
labelled cases; produces a `Draft`: a validated `Signature` and its YAML text, written to the
overlay's drafts folder for the curator to edit.

A line is distinctive when its masked template appears in no healthy log, in no incident or
seed case of another class, and no specific signature of the library already explains it.
Drain3 mines the distinctive lines' templates; the first one in causal order becomes the
pattern, its variable parts named captures. Class, category and owner come from the taxonomy;
role, prior, caveat and next steps from the class's hand-written signatures (the caveat and
steps of the one whose examples read most like the line); match examples are the incident's
own lines, no-match examples the most similar lines of the healthy logs and of other classes
that the pattern does not match.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import ValidationError

from denpex.curation.corpora import TextLine, case_lines, healthy_paths, labelled_cases, lines_of
from denpex.curation.errors import CurationError
from denpex.curation.mining import PatternDraft, message, mine, template_pattern
from denpex.curation.settings import CurationSettings
from denpex.match.lint import KNOWN_PLACEHOLDERS
from denpex.retrieval.masking import mask
from denpex.retrieval.seed import load_seed
from denpex.signatures.library import Library
from denpex.signatures.signature import GENERIC_MAX_PRIORITY, Role, Signature
from denpex.store.records import ExcerptLine, Incident
from denpex.store.schema import CurationState
from denpex.store.store import IncidentStore
from denpex.taxonomy import class_next_steps, failure_class

PRIORITY = 50
MIN_PRIOR = 0.7
"""A curated signature's prior is its class's usual one, but at least this: a curator confirmed
the class, and a prior below the gate's threshold would never settle the failure it was made
for. `denpex eval` checks it for calibration like any other."""
MAX_PRIOR = 0.9
NEAR_MISSES = 2
"""Near misses taken from the healthy logs, and as many from other classes."""
_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9_]{2,}")
_URL = re.compile(r"https?://\S+")


@dataclass(frozen=True)
class Draft:
    signature: Signature
    text: str
    path: Path | None = None
    lines: tuple[str, ...] = ()
    """The distinctive lines the pattern was mined from."""


def _tokens(text: str) -> set[str]:
    return {t.lower() for t in _TOKEN.findall(text)}


def _similarity(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def _explained(line: ExcerptLine, library: Library, known: dict[str, int]) -> bool:
    """Whether a specific signature of the library already settles this line. `known` is each
    signature's position by id: only the few signatures the lines name are read."""
    if line.signature_id is None:
        return False
    position = known.get(line.signature_id)
    if position is None:
        return False
    signature = library.signatures[position]
    return not (signature.priority <= GENERIC_MAX_PRIORITY or signature.tentative)


def _other_templates(
    store: IncidentStore, wanted: str, candidates: list[str], skip: set[str], seed: bool
) -> set[str]:
    """Templates among `candidates` that incidents confirmed as another class, or seed cases
    of another class, printed. A confident rules answer does not count: the line may be
    beside the evidence that settled it, not part of it."""
    other: set[str] = set()
    for case in load_seed() if seed else []:
        if case.failure_class != wanted:
            other.update(t for t in case.templates if t in candidates)
    for template in candidates:
        for incident, _ in store.sharing_templates([template], skip, limit=50):
            confirmed = incident.confirmed_class
            if confirmed is not None and confirmed != wanted:
                other.add(template)
    return other


def _class_signatures(library: Library, wanted: str) -> list[Signature]:
    return [
        s
        for s in library.signatures
        if s.failure_class == wanted and not s.generated and s.role is not Role.context
    ]


def _closeness(tokens: set[str], signature: Signature) -> float:
    return max(_similarity(tokens, _tokens(e.line)) for e in signature.examples.match)


def _title(text: str, limit: int = 120) -> str:
    if len(text) <= limit:
        return text
    return text[: text.rfind(" ", 0, limit)].rstrip(" ,;:") + " ..."


def _usable(template: str, captures: set[str]) -> bool:
    found = set(re.findall(r"{(\w+)}", template))
    return found <= (captures | KNOWN_PLACEHOLDERS)


def _near_misses(
    pool: list[TextLine], line: str, regex: re.Pattern[str], count: int
) -> list[tuple[float, TextLine]]:
    wanted = _tokens(message(line))
    scored = sorted(
        ((_similarity(wanted, _tokens(c.text)), c) for c in pool if c.text.strip()),
        key=lambda item: -item[0],
    )
    chosen: list[tuple[float, TextLine]] = []
    seen: set[str] = set()
    for score, candidate in scored:
        text = candidate.text.strip()
        template = mask(text)
        if template in seen or regex.search(text) or len(text) > 300:
            continue
        seen.add(template)
        chosen.append((score, candidate))
        if len(chosen) == count:
            break
    return chosen


def _identifier(words: str) -> str:
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", words)
    return re.sub(r"[^a-z0-9]+", "_", snake.lower()).strip("_")[:48] or "curated"


def _family_and_name(template: str, library: Library, overlay_ids: set[str]) -> tuple[str, str]:
    """`triton.runtime.errors.OutOfResources: ...` gives family triton, name out_of_resources;
    a message without a dotted exception name goes to family `curated`."""
    head = template.split(":", 1)[0].strip()
    dotted = re.fullmatch(r"([A-Za-z_][\w]*)(?:\.[A-Za-z_]\w*)*\.([A-Za-z_]\w*)", head)
    if dotted:
        family, name = _identifier(dotted.group(1)), _identifier(dotted.group(2))
    else:
        family = "curated"
        name = _identifier(" ".join(re.findall(r"[A-Za-z]+", template)[:6]))
    taken = set(library.ids()) | overlay_ids
    unique, n = name, 2
    while f"{family}.{unique}" in taken:
        unique, n = f"{name}_{n}", n + 1
    return family, unique


def _fallback_pattern(line: str) -> PatternDraft:
    text = message(line)
    return PatternDraft(re.escape(text), (), text.replace("{", "{{").replace("}", "}}"))


def propose(
    incident_id: str,
    store: IncidentStore,
    library: Library,
    settings: CurationSettings,
    *,
    overlay_ids: set[str] | None = None,
    write: bool = True,
) -> Draft:
    """A draft signature for a confirmed incident; written to the drafts folder unless
    `write` is false."""
    incident = store.get(incident_id)
    wanted = incident.confirmed_class
    if wanted is None:
        raise CurationError(
            f"incident {incident.id[:12]} has no confirmed cause: "
            f"denpex curate confirm {incident.id[:12]} --class CLASS first"
        )
    # Incidents confirmed alike, or still queued, that printed the same lines: more lines of
    # one template show the miner which parts vary.
    siblings = [
        other
        for other, _ in store.sharing_templates(incident.templates, {incident.id}, limit=50)
        if other.confirmed_class == wanted
        or (other.confirmed_class is None and other.curation_state == CurationState.queued)
    ]
    group = [incident, *siblings]
    skip = {i.id for i in group}
    known = {signature_id: i for i, signature_id in enumerate(library.ids())}
    candidates = [line for i in group for line in i.excerpt if not _explained(line, library, known)]
    if not candidates:
        raise CurationError(
            f"incident {incident.id[:12]} has no abnormal line a signature does not already explain"
        )
    cases = labelled_cases(settings.eval_dirs)
    healthy = lines_of(healthy_paths(settings.healthy, cases))
    hosts = {line.host for line in candidates if line.host}
    healthy_templates = {mask(line.text, hosts) for line in healthy}
    common = healthy_templates | _other_templates(
        store, wanted, [line.template for line in candidates], skip, settings.seed
    )
    distinctive = [line for line in candidates if line.template not in common]
    if not distinctive:
        raise CurationError(
            f"every abnormal line of incident {incident.id[:12]} is also printed by healthy "
            "runs or by failures of another class: nothing distinctive to draft from"
        )
    mined = mine([line.text for line in distinctive])
    lead = distinctive[0].text
    cluster = next(m for m in mined if lead in m.lines)
    pattern = template_pattern(cluster.template)
    compiled = re.compile(pattern.regex, re.ASCII)
    if not all(compiled.search(line) for line in cluster.lines):
        pattern = _fallback_pattern(lead)
        compiled = re.compile(pattern.regex, re.ASCII)
    examples = list(dict.fromkeys(cluster.lines))[:5]
    signature_text = _signature(
        incident,
        wanted,
        pattern,
        compiled,
        examples,
        library,
        healthy,
        [c for c in case_lines(cases) if c.failure_class != wanted],
        overlay_ids or set(),
    )
    try:
        signature = Signature.model_validate(yaml.safe_load(signature_text))
    except ValidationError as error:
        raise CurationError(f"the draft does not validate: {error}") from None
    path = None
    if write:
        settings.drafts_dir.mkdir(parents=True, exist_ok=True)
        path = settings.drafts_dir / f"{signature.id}.yaml"
        path.write_text(signature_text, encoding="utf-8")
    return Draft(signature, signature_text, path, tuple(examples))


def _signature(
    incident: Incident,
    wanted: str,
    pattern: PatternDraft,
    compiled: re.Pattern[str],
    examples: list[str],
    library: Library,
    healthy: list[TextLine],
    other_classes: list[TextLine],
    overlay_ids: set[str],
) -> str:
    known = failure_class(wanted)
    family, name = _family_and_name(message(examples[0]), library, overlay_ids)
    peers = _class_signatures(library, wanted)
    roles = Counter(s.role for s in peers)
    role = Role.symptom if roles[Role.symptom] > roles[Role.root_cause] else Role.root_cause
    priors = [s.confidence for s in peers if s.role is role]
    prior = min(MAX_PRIOR, max(MIN_PRIOR, statistics.median(priors) if priors else MIN_PRIOR))
    line_tokens = _tokens(message(examples[0]))
    nearest = max(peers, key=lambda s: _closeness(line_tokens, s), default=None)
    captures = set(pattern.captures)
    caveat = (
        nearest.caveat
        if nearest is not None and _usable(nearest.caveat, captures)
        else f"Drafted from {len(examples)} line(s) of a curated incident: the line shows "
        f"this failure was reported, not that nothing earlier caused it."
    )
    steps: list[str] = []
    for peer in sorted(peers, key=lambda s: -_closeness(line_tokens, s)):
        steps = [step for step in peer.next_steps if _usable(step, captures)]
        if steps:
            break
    steps += [s for s in class_next_steps(wanted) if _usable(s, captures) and s not in steps]
    if not steps:
        steps = [f"Follow up as for {wanted}: {known.meaning}"]
    note = f" Curator's note: {incident.confirmed_note}" if incident.confirmed_note else ""
    references = [f"denpex incident {incident.id}"]
    references += _URL.findall(incident.confirmed_note or "")
    no_match = [
        c.text.strip()
        for _, c in [
            *_near_misses(healthy, examples[0], compiled, NEAR_MISSES),
            *_near_misses(other_classes, examples[0], compiled, NEAR_MISSES),
        ]
    ]
    if not no_match:
        raise CurationError("no near-miss line to use as a no-match example was found")
    document = {
        "id": f"{family}.{name}",
        "title": _title(pattern.title),
        "status": "test",
        "failure_class": wanted,
        "category": known.category.value,
        "role": role.value,
        "confidence": round(prior, 2),
        "priority": PRIORITY,
        "patterns": [{"regex": pattern.regex}],
        "meaning": f"{known.meaning}.{note}",
        "caveat": caveat,
        "next_steps": steps,
        "owner": known.owner.value,
        "references": references,
        "examples": {
            "match": [
                {"line": line, "captures": compiled.search(line).groupdict()}  # type: ignore[union-attr]
                for line in examples
            ],
            "no_match": no_match,
        },
    }
    header = (
        f"# Drafted by `denpex curate propose` from incident {incident.id[:12]} "
        f"(confirmed {wanted} by {incident.confirmed_by or 'unknown'}).\n"
        "# Edit freely; then `denpex curate backtest` this file and `denpex curate promote` it.\n"
        "# no_match lines are near misses: the most similar lines of healthy logs and of other\n"
        "# classes that the pattern does not match.\n"
    )
    return header + yaml.safe_dump(document, sort_keys=False, width=100, allow_unicode=True)
