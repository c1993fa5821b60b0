"""The diagnosis as Markdown, for tickets, pull requests and chat that renders it."""

from __future__ import annotations

from denpex.models import Diagnosis
from denpex.render.common import cascade, evidence_label, when, where


def _fence(lines: list[str]) -> list[str]:
    body = "\n".join(lines)
    fence = "````" if "```" in body else "```"
    return [fence + "text", body, fence]


def render_markdown(diagnosis: Diagnosis) -> str:
    out = [f"# denpex: {diagnosis.status}", "", diagnosis.summary, ""]
    for position, root in enumerate(diagnosis.root_causes, 1):
        flag = " (best effort)" if root.best_effort else ""
        out += [
            f"## {position}. `{root.failure_class}` ({root.category}){flag}",
            "",
            f"- **What:** {root.title}",
            f"- **Where:** {where(root)}; first seen {when(root.first_seen)}",
            f"- **Confidence:** {root.confidence:.2f} via {root.source}"
            + (f" (`{root.signature_id}`)" if root.signature_id else ""),
            f"- **Cascade:** {cascade(root)}",
            f"- **Owner:** {root.owner}",
        ]
        if root.caveat:
            out.append(f"- **Caveat:** {root.caveat}")
        if root.evidence:
            out += ["", "Evidence:", ""]
            for line in root.evidence:
                out.append(f"- `{evidence_label(line)}`")
                out += ["", *_fence([*line.context[-6:], line.text]), ""]
        if root.next_steps:
            out += ["", "Next steps:", ""]
            out += [f"1. {step}" for step in root.next_steps]
        out.append("")
    provenance = diagnosis.provenance
    out.append(
        f"_{diagnosis.timeline.ranks_seen} rank(s), {len(diagnosis.inputs)} input(s); "
        f"denpex {provenance.denpex_version}, rules {provenance.rules_version}, "
        f"{provenance.elapsed_ms} ms_"
    )
    if diagnosis.curation_id:
        out += ["", f"Queued for curation as `{diagnosis.curation_id}`."]
    if diagnosis.warnings:
        out += ["", "Warnings:", ""] + [f"- {w}" for w in diagnosis.warnings]
    return "\n".join(out) + "\n"
