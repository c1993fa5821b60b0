"""The diagnosis for a terminal: what happened first, where, the proof, and what to do."""

from __future__ import annotations

from io import StringIO

from rich.console import Console
from rich.markup import escape

from denpex.models import Diagnosis
from denpex.render.common import cascade, evidence_label, when, where

_STATUS_STYLE = {
    "confident": "bold green",
    "best_effort": "bold yellow",
    "unknown": "bold red",
    "no_failure": "bold blue",
}


def render_text(diagnosis: Diagnosis, *, color: bool = False, width: int = 100) -> str:
    buffer = StringIO()
    console = Console(
        file=buffer,
        force_terminal=color,
        no_color=not color,
        width=width,
        highlight=False,
        soft_wrap=True,
    )
    style = _STATUS_STYLE.get(diagnosis.status, "bold")
    console.print(f"[{style}]{diagnosis.status.upper()}[/] {escape(diagnosis.summary)}")
    for position, root in enumerate(diagnosis.root_causes, 1):
        console.print()
        label = "best-effort " if root.best_effort else ""
        console.print(
            f"[bold]#{position} {escape(root.failure_class)}[/] ({root.category}) "
            f"{label}confidence {root.confidence:.2f}, via {root.source}"
            + (f" [{escape(root.signature_id)}]" if root.signature_id else "")
        )
        console.print(f"  {escape(root.title)}")
        console.print(f"  where: {where(root)}; first seen {when(root.first_seen)}")
        for line in root.evidence:
            console.print(f"  [dim]{escape(evidence_label(line))}[/]")
            for context_line in line.context[-6:]:
                console.print(f"      [dim]{escape(context_line)}[/]")
            console.print(f"    {escape(line.text)}")
        console.print(f"  cascade: {escape(cascade(root))}")
        if root.caveat:
            console.print(f"  caveat: {escape(root.caveat)}")
        for step in root.next_steps:
            console.print(f"  → {escape(step)}")
        console.print(f"  owner: {root.owner}")
    timeline = diagnosis.timeline
    console.print()
    console.print(
        f"[dim]{timeline.ranks_seen} rank(s), {timeline.hosts_seen} host(s), "
        f"{len(diagnosis.inputs)} input(s); rules {diagnosis.provenance.rules_version}, "
        f"{diagnosis.provenance.elapsed_ms} ms[/]"
    )
    if timeline.clock_offsets_s:
        offsets = ", ".join(f"{h} {o:+.3f}s" for h, o in timeline.clock_offsets_s.items())
        console.print(f"[dim]clock offsets: {escape(offsets)}[/]")
    if diagnosis.curation_id:
        short = diagnosis.curation_id[:12]
        console.print(f"queued for curation as {short}: denpex curate show {short}")
    for warning in diagnosis.warnings:
        console.print(f"[yellow]warning:[/] {escape(warning)}")
    return buffer.getvalue()
