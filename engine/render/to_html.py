"""The diagnosis as one self-contained HTML page, with a per-rank timeline picture.

The picture is inline SVG on the corrected clock, one lane per rank in rank order, grouped by
host (lines without a rank last): the verdict's originating event is drawn where and when it
happened, on the originating rank's highlighted lane, and every rank's first abnormal event
beside it; a legend says which mark is which and a table gives each host's clock offset. Each
host's block is skipped by the browser while off screen, so thousands of ranks stay
responsive. Everything from the input is escaped; the page loads nothing from anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from html import escape

from denpex.models import Diagnosis, RootCause, Timeline
from denpex.render.common import cascade, evidence_label, when, where

_ROW = 16
_LEFT = 150
_WIDTH = 900
_RIGHT = 24
_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
h1{font-size:1.3em} h2{font-size:1.1em;margin-top:1.6em} .status{font-weight:bold}
.confident{color:#1a7f37} .best_effort{color:#9a6700} .unknown{color:#cf222e}
.no_failure{color:#0969da} pre{background:#f6f8fa;padding:.6em;overflow-x:auto;font-size:.85em}
.meta{color:#57606a;font-size:.9em} svg text{font-size:11px;font-family:monospace}
.timeline{max-height:70vh;overflow:auto;border:1px solid #d0d7de;max-width:100%}
.timeline svg{display:block}
.host{content-visibility:auto;contain-intrinsic-size:auto 200px}
.lane.culprit rect.band{fill:#ffebe9} .lane rect.band{fill:transparent}
.legend{display:flex;flex-wrap:wrap;gap:1.2em;font-size:.9em;margin:.5em 0;padding:0}
.legend li{list-style:none}
.legend svg{vertical-align:middle} table.clocks{border-collapse:collapse;font-size:.9em}
table.clocks td,table.clocks th{border:1px solid #d0d7de;padding:.2em .6em;text-align:left}
"""
_ORIGIN = "#cf222e"
_FIRST = "#bf8700"
_LATER = "#8c959f"


@dataclass
class _Lane:
    rank: int | None
    host: str | None
    marks: list[tuple[datetime, str, str]] = field(default_factory=list)
    """(time, what, kind): kind is origin, first or later."""


def _origin_events(root: RootCause | None) -> list[tuple[int, str | None, datetime, str]]:
    """Where and when the verdict says the failure began: (rank, host, time, what)."""
    if root is None:
        return []
    ranks = root.originating_ranks or (
        [root.originating_rank] if root.originating_rank is not None else []
    )
    events = []
    for rank in ranks:
        line = next((e for e in root.evidence if e.rank == rank and e.time), None)
        moment = line.time if line else root.first_seen
        if moment is None:
            continue
        host = (line.host if line else None) or root.originating_host
        what = f"{root.failure_class} ({root.signature_id or root.source})"
        events.append((rank, host, moment, what))
    return events


def _lanes(diagnosis: Diagnosis, root: RootCause | None) -> tuple[list[_Lane], set[int]]:
    lanes: dict[tuple[int | None, str | None], _Lane] = {}
    hosts_of: dict[int, str | None] = {}
    for entry in diagnosis.timeline.first_abnormal:
        if entry.rank is not None and entry.host:
            hosts_of.setdefault(entry.rank, entry.host)
    ranked = {entry.rank for entry in diagnosis.timeline.first_abnormal}
    origins = _origin_events(root)
    culprits = {rank for rank, _, _, _ in origins}
    for rank, host, moment, what in origins:
        # The lane's host is the one its first abnormal line states, as for every other rank.
        stated = hosts_of.get(rank) if rank in ranked else host
        lane = lanes.setdefault((rank, None), _Lane(rank, stated))
        lane.marks.append((moment, what, "origin"))
    for entry in diagnosis.timeline.first_abnormal:
        if entry.time is None:
            continue
        key = (entry.rank, None if entry.rank is not None else entry.host)
        host = hosts_of.get(entry.rank, entry.host) if entry.rank is not None else entry.host
        lane = lanes.setdefault(key, _Lane(entry.rank, host))
        kind = "later" if entry.rank in culprits else "first"
        lane.marks.append((entry.time, entry.signature_id, kind))
    return list(lanes.values()), culprits


def _host_order(lanes: list[_Lane]) -> list[tuple[str | None, list[_Lane]]]:
    """Hosts by their lowest rank; ranks in order within a host; lines without a rank last."""
    groups: dict[str | None, list[_Lane]] = {}
    for lane in lanes:
        if lane.rank is not None:
            groups.setdefault(lane.host, []).append(lane)
    ordered = sorted(groups.items(), key=lambda item: min(lane.rank or 0 for lane in item[1]))
    for _, members in ordered:
        members.sort(key=lambda lane: lane.rank or 0)
    unranked = [lane for lane in lanes if lane.rank is None]
    return [*ordered, *([("", unranked)] if unranked else [])]


def _legend() -> str:
    def swatch(shape: str) -> str:
        return f"<svg width='16' height='14' aria-hidden='true'>{shape}</svg>"

    items = [
        (
            swatch(f"<path d='M8 1 L15 7 L8 13 L1 7 Z' fill='{_ORIGIN}' stroke='#000'/>"),
            "where and when the failure began (the verdict's originating event)",
        ),
        (
            swatch(f"<circle cx='8' cy='7' r='5' fill='{_FIRST}'/>"),
            "a rank's first abnormal event",
        ),
        (
            swatch(f"<circle cx='8' cy='7' r='4' fill='{_LATER}'/>"),
            "a culprit rank's later event (e.g. the signal that ended it)",
        ),
        (
            swatch("<rect x='0' y='1' width='16' height='12' fill='#ffebe9'/>"),
            "the originating rank's lane",
        ),
    ]
    return (
        "<ul class='legend'>"
        + "".join(f"<li>{mark} {escape(text)}</li>" for mark, text in items)
        + "</ul>"
    )


def _clocks(timeline: Timeline) -> str:
    if not timeline.clock_offsets_s and not timeline.clock_estimates:
        hosts = "one host" if timeline.hosts_seen <= 1 else f"{timeline.hosts_seen} hosts"
        return (
            f"<p class='meta'>Clock offsets: none applied ({hosts}; times are as the logs "
            "printed them).</p>"
        )
    rows = []
    for host in sorted(set(timeline.clock_offsets_s) | set(timeline.clock_estimates)):
        estimate = timeline.clock_estimates.get(host)
        offset = timeline.clock_offsets_s.get(host, estimate.offset_s if estimate else 0.0)
        spread = f"±{estimate.uncertainty_s:.3f} s" if estimate else ""
        anchors = str(estimate.anchors) if estimate else ""
        rows.append(
            f"<tr><td>{escape(host)}</td><td>{offset:+.3f} s</td><td>{spread}</td>"
            f"<td>{anchors}</td></tr>"
        )
    return (
        "<p class='meta'>Times are on one corrected clock; each host's offset was subtracted:"
        "</p><table class='clocks'><tr><th>host</th><th>offset</th><th>uncertainty</th>"
        f"<th>anchors</th></tr>{''.join(rows)}</table>"
    )


def _timeline(diagnosis: Diagnosis, root: RootCause | None) -> str:
    lanes, culprits = _lanes(diagnosis, root)
    times = [moment for lane in lanes for moment, _, _ in lane.marks]
    if not times:
        return "<p class='meta'>No timed abnormal events to draw.</p>"
    start, end = min(times), max(times)
    span = max((end - start).total_seconds(), 1e-3)
    usable = _WIDTH - _LEFT - _RIGHT

    def x(moment: datetime) -> float:
        return _LEFT + (moment - start).total_seconds() / span * usable

    offsets = diagnosis.timeline.clock_offsets_s
    blocks = []
    for host, members in _host_order(lanes):
        if host == "":
            title = "lines without a rank (launcher, scheduler)"
        else:
            title = f"host {host}" if host else "host not stated"
            if host and host in offsets:
                title += f" (clock offset {offsets[host]:+.3f} s)"
        rows = [f"<text x='4' y='12' font-weight='bold'>{escape(title)}</text>"]
        for index, lane in enumerate(members):
            y = _ROW * (index + 1) + 8
            culprit = lane.rank in culprits
            label = f"rank {lane.rank}" if lane.rank is not None else lane.host or "no rank"
            marks = []
            for moment, what, kind in sorted(lane.marks, key=lambda mark: mark[2] == "origin"):
                cx = x(moment)
                tip = f"<title>{escape(what)} at {escape(when(moment))}</title>"
                if kind == "origin":
                    anchor = "end" if cx > _WIDTH / 2 else "start"
                    nudge = -10 if anchor == "end" else 10
                    marks.append(
                        f"<path class='origin' d='M{cx:.1f} {y - 7} l7 7 l-7 7 l-7 -7 Z' "
                        f"fill='{_ORIGIN}' stroke='#000'>{tip}</path>"
                        f"<text x='{cx + nudge:.1f}' y='{y - 1}' text-anchor='{anchor}' "
                        f"fill='{_ORIGIN}'>began {escape(when(moment)[11:])}</text>"
                    )
                else:
                    colour, radius = (_LATER, 4) if kind == "later" else (_FIRST, 5)
                    marks.append(
                        f"<circle class='{kind}' cx='{cx:.1f}' cy='{y}' r='{radius}' "
                        f"fill='{colour}'>{tip}</circle>"
                    )
            rows.append(
                f"<g class='lane{' culprit' if culprit else ''}' data-rank="
                f"'{'' if lane.rank is None else lane.rank}'>"
                f"<rect class='band' x='0' y='{y - 8}' width='{_WIDTH}' height='{_ROW}'/>"
                f"<text x='12' y='{y + 4}'>{escape(label)}</text>"
                f"<line x1='{_LEFT}' y1='{y}' x2='{_WIDTH - _RIGHT}' y2='{y}' stroke='#d0d7de'/>"
                f"{''.join(marks)}</g>"
            )
        height = _ROW * (len(members) + 1) + 4
        blocks.append(
            f"<div class='host' style='contain-intrinsic-size:auto {height}px'>"
            f"<svg width='{_WIDTH}' height='{height}'>{''.join(rows)}</svg></div>"
        )
    axis = (
        f"<svg width='{_WIDTH}' height='18' role='img' aria-label='time axis'>"
        f"<text x='{_LEFT}' y='13'>{escape(when(start))}</text>"
        f"<text x='{_WIDTH - _RIGHT}' y='13' text-anchor='end'>+{span:.3f} s</text></svg>"
    )
    return (
        f"{_legend()}<div class='timeline' role='img' aria-label='abnormal events per rank, "
        f"grouped by host'>{axis}{''.join(blocks)}</div>{_clocks(diagnosis.timeline)}"
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
        f"<h2>Timeline</h2>{_timeline(diagnosis, top)}"
        + "\n".join(sections)
        + (f"<h2>Warnings</h2><ul>{warnings}</ul>" if warnings else "")
        + f"<p class='meta'>{diagnosis.timeline.ranks_seen} rank(s), "
        f"{len(diagnosis.inputs)} input(s); denpex {escape(provenance.denpex_version)}, rules "
        f"{escape(provenance.rules_version)}, {provenance.elapsed_ms} ms</p></body></html>\n"
    )
