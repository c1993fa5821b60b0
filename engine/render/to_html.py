"""The diagnosis as one self-contained HTML page, with a per-rank timeline picture.

The picture is inline SVG: one row per rank, a mark at the rank's first abnormal event on the
corrected clock, the originating ranks' marks in red. Everything from the input is escaped; the
page loads nothing from anywhere.
"""

from __future__ import annotations

from datetime import datetime
from html import escape

from denpex.models import Diagnosis, FirstAbnormal, RootCause
from denpex.render.common import cascade, evidence_label, when, where

_ROW = 18
_LEFT = 90
_WIDTH = 760
_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
h1{font-size:1.3em} h2{font-size:1.1em;margin-top:1.6em} .status{font-weight:bold}
.confident{color:#1a7f37} .best_effort{color:#9a6700} .unknown{color:#cf222e}
.no_failure{color:#0969da} pre{background:#f6f8fa;padding:.6em;overflow-x:auto;font-size:.85em}
.meta{color:#57606a;font-size:.9em} svg text{font-size:11px;font-family:monospace}
"""


def _timeline_svg(entries: list[FirstAbnormal], origins: set[int]) -> str:
    timed = [e for e in entries if e.time is not None]
    if not timed:
        return "<p class='meta'>No timed abnormal events to draw.</p>"
    start = min(e.time for e in timed if e.time)
    end = max(e.time for e in timed if e.time)
    span = max((end - start).total_seconds(), 1e-3)
    height = _ROW * len(timed) + 30

    def x(moment: datetime) -> float:
        return _LEFT + (moment - start).total_seconds() / span * (_WIDTH - _LEFT - 20)

    rows = []
    for index, entry in enumerate(timed):
        y = 15 + index * _ROW
        colour = "#cf222e" if entry.rank in origins else "#bf8700"
        label = "?" if entry.rank is None else str(entry.rank)
        rows.append(
            f"<text x='4' y='{y + 4}'>rank {escape(label)}</text>"
            f"<line x1='{_LEFT}' y1='{y}' x2='{_WIDTH - 20}' y2='{y}' stroke='#d0d7de'/>"
            f"<circle cx='{x(entry.time):.1f}' cy='{y}' r='5' fill='{colour}'>"  # type: ignore[arg-type]
            f"<title>{escape(entry.signature_id)} at {escape(when(entry.time))}</title></circle>"
        )
    axis = (
        f"<text x='{_LEFT}' y='{height - 4}'>{escape(when(start))}</text>"
        f"<text x='{_WIDTH - 20}' y='{height - 4}' text-anchor='end'>+{span:.1f} s</text>"
    )
    return (
        f"<svg width='{_WIDTH}' height='{height}' role='img' aria-label='first abnormal event "
        f"per rank'>{''.join(rows)}{axis}</svg>"
    )


def _root_cause(position: int, root: RootCause) -> str:
    flag = " (best effort)" if root.best_effort else ""
    parts = [
        f"<h2>{position}. {escape(root.failure_class)} ({escape(root.category)}){flag}</h2>",
        f"<p>{escape(root.title)}</p>",
        "<ul>",
        f"<li>Where: {escape(where(root))}; first seen {escape(when(root.first_seen))}</li>",
        f"<li>Confidence {root.confidence:.2f} via {escape(root.source)}"
        + (f" (<code>{escape(root.signature_id)}</code>)" if root.signature_id else "")
        + "</li>",
        f"<li>Cascade: {escape(cascade(root))}</li>",
        f"<li>Owner: {escape(root.owner)}</li>",
    ]
    if root.caveat:
        parts.append(f"<li>Caveat: {escape(root.caveat)}</li>")
    parts.append("</ul>")
    for line in root.evidence:
        body = "\n".join([*line.context[-6:], line.text])
        parts.append(f"<p class='meta'>{escape(evidence_label(line))}</p><pre>{escape(body)}</pre>")
    if root.next_steps:
        parts.append("<ol>" + "".join(f"<li>{escape(s)}</li>" for s in root.next_steps) + "</ol>")
    return "\n".join(parts)


def render_html(diagnosis: Diagnosis) -> str:
    top = diagnosis.root_causes[0] if diagnosis.root_causes else None
    origins = set(top.originating_ranks) if top else set()
    if top and top.originating_rank is not None:
        origins.add(top.originating_rank)
    provenance = diagnosis.provenance
    sections = [_root_cause(i, r) for i, r in enumerate(diagnosis.root_causes, 1)]
    warnings = "".join(f"<li>{escape(w)}</li>" for w in diagnosis.warnings)
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<title>denpex diagnosis</title>"
        f"<style>{_STYLE}</style></head><body>"
        f"<h1>denpex: <span class='status {escape(diagnosis.status)}'>"
        f"{escape(diagnosis.status)}</span></h1>"
        f"<p>{escape(diagnosis.summary)}</p>"
        f"<h2>Timeline</h2>{_timeline_svg(diagnosis.timeline.first_abnormal, origins)}"
        + "\n".join(sections)
        + (f"<h2>Warnings</h2><ul>{warnings}</ul>" if warnings else "")
        + f"<p class='meta'>{diagnosis.timeline.ranks_seen} rank(s), "
        f"{len(diagnosis.inputs)} input(s); denpex {escape(provenance.denpex_version)}, rules "
        f"{escape(provenance.rules_version)}, {provenance.elapsed_ms} ms</p></body></html>\n"
    )
