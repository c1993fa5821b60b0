"""Writes docs/report-timeline.png: the HTML report of a real corpus case, its verdict and
timeline, as headless Chromium draws it.

    .venv/bin/python -m tests.browser.screenshot [docs/report-timeline.png]
"""

from __future__ import annotations

import sys
from pathlib import Path

from denpex.render import render_html
from tests.browser.conftest import _chromium_path
from tests.conftest import REPO, diagnose_paths

CASE = REPO / "evals" / "corpus" / "inject-collective-timeout-stuck-rank"


def main(target: Path) -> None:
    from playwright.sync_api import sync_playwright

    page_html = render_html(diagnose_paths([str(CASE)]))
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=_chromium_path(), args=["--no-sandbox"]
        )
        page = browser.new_page(viewport={"width": 1000, "height": 1000})
        page.set_content(page_html)
        bottom = page.evaluate(
            "() => { const clocks = document.querySelector('.timeline').nextElementSibling;"
            " const box = clocks.getBoundingClientRect(); return box.bottom + window.scrollY; }"
        )
        page.screenshot(
            path=str(target), clip={"x": 0, "y": 0, "width": 1000, "height": bottom + 12}
        )
        browser.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "docs" / "report-timeline.png")
