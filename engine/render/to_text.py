"""The diagnosis for a terminal: what happened first, where, the proof, and what to do.

Consumes a `Diagnosis`, the width to wrap to (the terminal's; None leaves lines whole, for a
pipe or a file) and whether to colour; produces text. Wrapped lines keep their indent, so each
root cause, evidence line and next step stays one visible block.
"""

from __future__ import annotations

from io import StringIO

from rich.console import Console
from rich.text import Text

from denpex.models import Diagnosis
from denpex.render.common import cascade, evidence_label, when, where

_STATUS_STYLE = {
    "confident": "bold green",
    "best_effort": "bold yellow",
    "unknown": "bold red",
    "no_failure": "bold blue",
}
UNWRAPPED = 100_000
"""The console width that never wraps: a pipe keeps each log line whole."""


def render_text(diagnosis: Diagnosis, *, color: bool = False, width: int | None = None) -> str:
    """`width`: the terminal's columns to wrap to (at least 40); None keeps lines whole."""
    buffer = StringIO()
    console = Console(
        file=buffer,
        force_terminal=color,
        no_color=not color,
        color_system="standard" if color else None,
        width=max(40, width) if width else UNWRAPPED,
        highlight=False,
        emoji=False,
        markup=False,
    )

    def say(indent: int, *parts: str | tuple[str, str], hang: int = 0) -> None:
        """One paragraph at `indent`; its wrapped lines `hang` further in."""
        text = Text.assemble(*parts)
        lines = [text]
        if width:
            # A long token (a path, a hex string) is folded rather than left to spill.
            lines = list(text.wrap(console, console.width - indent, overflow="fold"))[:1]
            plain, offset = text.plain, len(lines[0].plain)
            while offset < len(plain) and plain[offset] == " ":
                offset += 1
            if offset < len(plain):
                rest = text[offset:]
                lines += rest.wrap(console, console.width - indent - hang, overflow="fold")
        for number, line in enumerate(lines):
            line.rstrip()
            pad = indent + (hang if number else 0)
            console.print(Text(" " * pad) + line, soft_wrap=True)

    style = _STATUS_STYLE.get(diagnosis.status, "bold")
    say(0, (diagnosis.status.upper(), style), " ", diagnosis.summary, hang=2)
    for position, root in enumerate(diagnosis.root_causes, 1):
        console.print()
        label = "best-effort " if root.best_effort else ""
        say(
            0,
            (f"#{position} {root.failure_class}", "bold"),
            f" ({root.category}) {label}confidence {root.confidence:.2f}, via {root.source}"
            + (f" [{root.signature_id}]" if root.signature_id else ""),
        )
        say(2, root.title)
        say(2, f"where: {where(root)}; first seen {when(root.first_seen)}", hang=2)
        for line in root.evidence:
            say(2, (evidence_label(line), "dim"), hang=2)
            for context_line in line.context[-6:]:
                say(6, (context_line, "dim"))
            say(4, line.text)
        say(2, f"cascade: {cascade(root)}", hang=2)
        if root.caveat:
            say(2, f"caveat: {root.caveat}", hang=2)
        for step in root.next_steps:
            say(2, ("→ ", "bold"), step, hang=2)
        say(2, f"owner: {root.owner}")
    timeline = diagnosis.timeline
    console.print()
    say(
        0,
        (
            f"{timeline.ranks_seen} rank(s), {timeline.hosts_seen} host(s), "
            f"{len(diagnosis.inputs)} input(s); rules {diagnosis.provenance.rules_version}, "
            f"{diagnosis.provenance.elapsed_ms} ms",
            "dim",
        ),
    )
    if timeline.clock_offsets_s:
        offsets = ", ".join(f"{h} {o:+.3f}s" for h, o in timeline.clock_offsets_s.items())
        say(0, (f"clock offsets: {offsets}", "dim"))
    if diagnosis.curation_id:
        short = diagnosis.curation_id[:12]
        say(0, f"queued for curation as {short}: denpex curate show {short}")
    for warning in diagnosis.warnings:
        say(0, ("warning:", "yellow"), " ", warning)
    return buffer.getvalue()
