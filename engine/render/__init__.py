"""render stage: one `Diagnosis`, several presentations."""

from __future__ import annotations

from collections.abc import Callable

from denpex.models import Diagnosis
from denpex.render.to_html import render_html
from denpex.render.to_json import render_json
from denpex.render.to_markdown import render_markdown
from denpex.render.to_slack import render_slack
from denpex.render.to_text import render_text

RENDERERS: dict[str, Callable[[Diagnosis], str]] = {
    "text": render_text,
    "json": render_json,
    "markdown": render_markdown,
    "html": render_html,
    "slack": render_slack,
}

__all__ = [
    "RENDERERS",
    "render_html",
    "render_json",
    "render_markdown",
    "render_slack",
    "render_text",
]
