"""Turns ranked hypotheses into the contract's `RootCause` entries and the summary sentence.

Consumes hypotheses and the counts of matches that were only counted; produces `RootCause`
models with evidence lines, the cascade each explains, and next steps whose placeholders are
filled from the captures and from who printed the evidence.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence

from denpex.events import Match
from denpex.hang.models import Candidate
from denpex.ingest.timestamps import to_datetime
from denpex.models import Evidence, Explains, RankFinding, RootCause, Source
from denpex.reason.hypothesis import EVIDENCE_LINES, Hypothesis
from denpex.render.common import where
from denpex.taxonomy import Category, category_next_steps, class_next_steps, failure_class

_FORMATTER = string.Formatter()
SYMPTOM_ONLY = "Inferred from symptoms only"
"""How a caveat begins when the answer reads symptoms alone (the best effort may outweigh it)."""
NOT_IN_EVIDENCE = "Not in evidence"
"""How an open reading's caveat begins: a class no line states, offered because it often lies
behind the answer's (the best effort weighs it as a partial answer)."""


class _Placeholders(dict[str, str]):
    """A placeholder no evidence fills, and that `fill` cannot leave out of the sentence (inside
    a command, say), stays visible as <name> for a person to fill in."""

    def __missing__(self, key: str) -> str:
        return f"<{key}>"


_WHO = ("rank", "local_rank", "host", "pid")
"""Where a line came from: taken from the originating lines only, never from the cascade."""


def placeholders_for(match: Match | None, hypothesis: Hypothesis) -> _Placeholders:
    values = _Placeholders()
    origin = hypothesis.originating
    if origin is not None:
        for name in _WHO:
            value = getattr(origin, name)
            if value is not None:
                values[name] = str(value)
    if match is not None:
        values.update(match.captures)
    # What the first line does not say, the other lines of the same failure may: its other
    # root lines (who and what), then the lines it explains (what only: a peer's timeout
    # value is the job's, a peer's host is not the origin's).
    for other in hypothesis.roots:
        for name, value in other.captures.items():
            values.setdefault(name, value)
        if other.event.host and origin is not None and other.event.rank == origin.rank:
            values.setdefault("host", other.event.host)
    for other in [*hypothesis.corroboration, *hypothesis.consequences, *hypothesis.explained]:
        for name, value in other.captures.items():
            if name not in _WHO:
                values.setdefault(name, value)
    if hypothesis.culprit is not None:
        culprit = hypothesis.culprit
        values.setdefault("suspects", ", ".join(str(r) for r in culprit.suspects) or "unknown")
        if culprit.seq is not None:
            values.setdefault("seq", culprit.seq)
    return values


_PREPOSITIONS = "on|from|of|at|in|to|for|between|with"
_NOUNS = ("rank", "pid", "job", "node", "host", "peer")
_COMMAND_BEFORE = re.compile(r"(?:[=:'\"]|\s-{1,2}[\w-]+\s)$")
"""What precedes a command's argument (`NodeName=`, `-j `, a quote): such a field stays."""


def _leave_out(template: str, name: str) -> str:
    """The template with the unknown `{name}` left out where the sentence reads without it:
    `on {host}`, `({host})`, `before the {timeout_ms} ms timeout`, `({bytes} bytes)`; in
    prose a rank, host, pid, job, node or peer becomes `the failing host` (and so on). A
    command's argument (`NodeName={host}`, `sacct -j {job}`) stays, shown as <name>."""
    field = r"(?<!\{)\{" + re.escape(name) + r"\}(?!\})"
    units = [name] + ([name.rsplit("_", 1)[1]] if name.endswith(("_ms", "_s")) else [])
    rules: list[tuple[str, str]] = [
        (r"\s*\(" + field + r"\)", ""),
        *((r"\s*\(" + field + r"\s+" + re.escape(unit) + r"\)", "") for unit in units),
        *((field + r"\s+" + re.escape(unit) + r"\b\s*", "") for unit in units),
        (r"\s+(?:" + _PREPOSITIONS + r")\s+" + field + r"(?=[\s,;:.)]|$)", ""),
        (r"\b(" + "|".join(_NOUNS) + r"|GPU|process)\s+" + field, r"the failing \1"),
    ]
    template = re.sub(
        r"^(?:On|From|At) " + field + r",\s*(\w)", lambda found: found.group(1).upper(), template
    )
    for pattern, replacement in rules:
        template = re.sub(pattern, replacement, template, flags=re.IGNORECASE)
    if name in _NOUNS:

        def prose(found: re.Match[str]) -> str:
            before = found.string[: found.start()]
            return found.group(0) if _COMMAND_BEFORE.search(before) else f"the failing {name}"

        template = re.sub(field, prose, template)
    return template


def fill(template: str, values: Mapping[str, str]) -> str:
    """The template with every placeholder the evidence knows filled, and the others left
    out where the sentence reads without them (else shown as <name>)."""
    try:
        named = {field for _, field, _, _ in _FORMATTER.parse(template) if field}
    except ValueError:
        return template  # a malformed template is shown as written rather than dropped
    for name in sorted(named - set(values)):
        if name.isidentifier():
            template = _leave_out(template, name)
    try:
        return _FORMATTER.vformat(template, (), _Placeholders(values))
    except (ValueError, IndexError, KeyError, AttributeError):
        return template


def evidence_of(match: Match, with_context: bool = False) -> Evidence:
    event = match.event
    return Evidence(
        source=event.source,
        line=event.line,
        rank=event.rank,
        host=event.host,
        time=to_datetime(event.time),
        time_inferred=event.time_inferred,
        text=event.text,
        signature_id=match.signature_id,
        context=list(event.context) if with_context else [],
    )


def _evidence_lines(hypothesis: Hypothesis) -> list[Evidence]:
    chosen = (
        hypothesis.roots
        or list(hypothesis.culprit.evidence if hypothesis.culprit else [])
        or hypothesis.corroboration
    )
    seen: set[tuple[str, int]] = set()
    lines: list[Evidence] = []
    for match in chosen:
        key = (match.event.source, match.event.line)
        if key in seen:
            continue
        seen.add(key)
        lines.append(evidence_of(match, with_context=not lines))
        if len(lines) == EVIDENCE_LINES:
            break
    return lines


def _explains(hypothesis: Hypothesis, dropped: Mapping[tuple[str, int | None], int]) -> Explains:
    explained = [*hypothesis.consequences, *hypothesis.explained]
    signature_ids = sorted({m.signature_id for m in explained})
    counted = sum(n for (sid, _), n in dropped.items() if sid in signature_ids)
    return Explains(
        events=len(explained) + counted,
        ranks=sorted({m.event.rank for m in explained if m.event.rank is not None}),
        hosts=sorted({m.event.host for m in explained if m.event.host is not None}),
        signature_ids=signature_ids,
    )


def _literal(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _candidate_values(candidate: Candidate) -> dict[str, str]:
    values = {"ranks": ", ".join(str(r) for r in candidate.ranks)}
    if candidate.seq is not None:
        values["seq"] = str(candidate.seq)
    if candidate.op:
        values["op"] = candidate.op
    if candidate.process_group:
        values["process_group"] = candidate.process_group
    sites = [e.call_site for e in candidate.evidence if e.call_site]
    if sites:
        values["call_site"] = sites[0]
    return values


def _next_steps(own: Sequence[str], category: Category) -> list[str]:
    """The signature's steps, then its category's, unless the signature already covers them."""
    steps = list(own)
    mentioned = " ".join(steps).lower()
    for step in category_next_steps().get(category, ()):
        if "drain" in step.lower() and "drain" in mentioned:
            continue
        steps.append(step)
    return steps


def to_root_cause(
    hypothesis: Hypothesis, dropped: Mapping[tuple[str, int | None], int]
) -> RootCause:
    signature = hypothesis.signature
    fc = failure_class(hypothesis.failure_class)
    first = hypothesis.roots[0] if hypothesis.roots else None
    values = placeholders_for(first, hypothesis)
    values.setdefault("failure_class", fc.id)
    origin = hypothesis.originating
    title = signature.title if signature is not None else hypothesis.failure_class
    steps = _next_steps(signature.next_steps if signature is not None else (), fc.category)
    caveat = signature.caveat if signature is not None else ""
    if hypothesis.culprit is not None:
        title = hypothesis.culprit.headline()
        # Calls that differ at one point are the mismatch itself, read from the ranks' records;
        # only which side diverged is left open. Anything else is a reading of symptoms.
        lead = (
            "Read from the ranks' own records of the collective; which side diverged first "
            "is not in evidence. "
            if hypothesis.culprit.diverged
            else f"{SYMPTOM_ONLY}: no root-cause record was found for the suspects. "
        )
        caveat = lead + caveat
    reading = hypothesis.reading
    if reading is not None:
        title = (
            f"Possibly {fc.id}, which often lies behind {hypothesis.behind}: no line of the "
            "input states it"
        )
        caveat = f"{NOT_IN_EVIDENCE}. Listed because {reading.why}"
        steps = _next_steps((reading.check,), fc.category)
    candidate = hypothesis.dump_candidate
    if candidate is not None:
        # Text read from dumps is not a template: its braces must survive the placeholders.
        title = _literal(candidate.summary)
        caveat = _literal(
            " ".join(
                [
                    "Read from the collectives' progress in the Flight Recorder dumps.",
                    *candidate.caveats,
                ]
            )
        )
        steps = [*class_next_steps(fc.id), *steps]
        values.update(_candidate_values(candidate))
    finding = hypothesis.finding
    named = origin.rank if origin else None
    rank_finding = None
    if finding is not None:
        rank_finding = RankFinding(
            mechanism=finding.mechanism if named is not None else "undetermined",
            basis=finding.basis if named is not None else None,
            # Undetermined: the reason no rank is named is what the finding rests on.
            evidence=finding.evidence if named is not None else finding.reason,
            caveat=finding.caveat if named is not None else "",
        )
        if named is not None and finding.basis == "inferred" and finding.caveat:
            caveat = f"{caveat} Rank {named} is inferred ({finding.evidence}): {finding.caveat}."
    candidates = list(finding.candidates) if finding is not None and named is None else []
    return RootCause(
        failure_class=fc.id,
        category=fc.category,
        signature_id=(
            signature.id
            if signature is not None
            else f"flight_recorder.{candidate.kind}"
            if candidate is not None
            else None
        ),
        confidence=round(hypothesis.confidence, 3),
        source=Source.rules,
        best_effort=False,
        originating_rank=origin.rank if origin else None,
        originating_ranks=(
            list(candidate.ranks)
            if candidate is not None
            else [origin.rank]
            if origin is not None and origin.rank is not None
            else []
        ),
        originating_host=origin.host if origin else None,
        originating_local_rank=origin.local_rank if origin else None,
        first_seen=to_datetime(hypothesis.first_seen),
        title=fill(title, values),
        caveat=fill(caveat, values),
        evidence=_evidence_lines(hypothesis),
        explains=_explains(hypothesis, dropped),
        next_steps=[fill(step, values) for step in steps],
        owner=fc.owner,  # routed by class: the team that fixes this kind of failure
        dump_evidence=list(candidate.evidence) if candidate is not None else [],
        rank_finding=rank_finding,
        candidate_ranks=candidates,
        candidate_reason=finding.reason if candidates and finding is not None else "",
    )


def summary_of(root: RootCause) -> str:
    origin = where(root, undetermined="")
    place = f" ({origin})" if origin else ""
    when = f" at {root.first_seen:%Y-%m-%d %H:%M:%S}" if root.first_seen else ""
    cascade = ""
    if root.explains.events:
        ranks = root.explains.ranks
        on = f" on {len(ranks)} rank(s)" if ranks else ""
        cascade = f"; {root.explains.events} later error(s){on} are its cascade"
    quoted = ""
    if root.evidence:
        text = root.evidence[0].text.strip()
        quoted = f' ("{text[:157]}...")' if len(text) > 160 else f' ("{text}")'
    return f"{root.failure_class}{place}{when}: {root.title}{quoted}{cascade}."


def no_cause_summary(matches: Sequence[Match]) -> str:
    if not matches:
        return "No failure signature matched the input."
    return "Only context lines matched; no failure is in evidence."
