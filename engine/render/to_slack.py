"""The diagnosis as Slack Block Kit JSON, for a chatops bot to post as it is.

Slack caps a section's text at 3000 characters and a message at 50 blocks; evidence is cut to
fit and says so.
"""

from __future__ import annotations

import json
from typing import Any

from denpex.models import Diagnosis, RootCause
from denpex.render.common import cascade, evidence_label, when, where

_TEXT_LIMIT = 2900
_ROOT_CAUSES_SHOWN = 3


_CUT = "\n…(cut)"


def _cut(text: str, limit: int = _TEXT_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - len(_CUT)] + _CUT


def _fenced(label: str, body: str) -> str:
    """`label` and `body` in a code block, the body cut so the closing fence always stays."""
    room = _TEXT_LIMIT - len(label) - len("\n``````")
    return f"{label}\n```{_cut(body, room)}```"


def _section(markdown: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": _cut(markdown)}}


def _plain(text: str) -> str:
    """Slack mrkdwn treats <, > and & as markup; escape them as Slack documents."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _root_cause_blocks(position: int, root: RootCause) -> list[dict[str, Any]]:
    flag = " _(best effort)_" if root.best_effort else ""
    blocks = [
        _section(
            f"*{position}. `{root.failure_class}`* ({root.category}){flag}\n"
            f"{_plain(root.title)}\n*Where:* {_plain(where(root))}, first seen "
            f"{when(root.first_seen)}\n*Confidence:* {root.confidence:.2f} via {root.source}\n"
            f"*Cascade:* {_plain(cascade(root))}\n*Owner:* {root.owner}"
        )
    ]
    if root.evidence:
        line = root.evidence[0]
        body = "\n".join([*line.context[-4:], line.text]).replace("```", "'''")
        blocks.append(_section(_fenced(_plain(evidence_label(line)), _plain(body))))
    if root.next_steps:
        steps = "\n".join(f"• {_plain(step)}" for step in root.next_steps)
        blocks.append(_section(f"*Next steps*\n{steps}"))
    return blocks


def render_slack(diagnosis: Diagnosis) -> str:
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": f"denpex: {diagnosis.status}"}},
        _section(_plain(diagnosis.summary)),
    ]
    for position, root in enumerate(diagnosis.root_causes[:_ROOT_CAUSES_SHOWN], 1):
        blocks.append({"type": "divider"})
        blocks.extend(_root_cause_blocks(position, root))
    provenance = diagnosis.provenance
    blocks.append(
        {
            "type": "context",
            "elements": [
                {
                    "type": "mrkdwn",
                    "text": f"{diagnosis.timeline.ranks_seen} rank(s), {len(diagnosis.inputs)} "
                    f"input(s); rules {provenance.rules_version}; {provenance.elapsed_ms} ms",
                }
            ],
        }
    )
    return json.dumps({"text": _plain(diagnosis.summary)[:300], "blocks": blocks}, indent=2) + "\n"
