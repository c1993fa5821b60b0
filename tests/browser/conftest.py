"""Headless Chromium for the browser tests: Debian's `chromium`, driven by Playwright.

Set up with `apt-get install -y chromium` (or `make browser-deps`); another build can be named
in PLAYWRIGHT_CHROMIUM_EXECUTABLE_PATH. Without one, every browser test skips and says why.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest


def _chromium_path() -> str | None:
    named = os.environ.get("PLAYWRIGHT_CHROMIUM_EXECUTABLE_PATH")
    if named:
        return named if Path(named).exists() else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("the browser tests need Playwright: pip install -e '.[dev]'")
    executable = _chromium_path()
    if executable is None:
        pytest.skip(
            "no chromium: apt-get install -y chromium (or set PLAYWRIGHT_CHROMIUM_EXECUTABLE_PATH)"
        )
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield launched
        launched.close()


@dataclass
class Watched:
    """A page, the console errors it logged and every request that left this machine."""

    page: Any
    errors: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)


@pytest.fixture
def watched(browser: Any) -> Iterator[Watched]:
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    page = context.new_page()
    seen = Watched(page)
    page.on("console", lambda m: seen.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: seen.errors.append(str(error)))

    def local_only(route: Any) -> None:
        url = route.request.url
        if url.startswith(("http://127.0.0.1", "data:", "about:", "blob:", "file:")):
            route.continue_()
        else:
            seen.outside.append(url)
            route.abort()

    page.route("**/*", local_only)
    yield seen
    context.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Served:
    """An ASGI app served by uvicorn on a loopback port, in a thread."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        self.port = free_port()
        self.server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Served:
        self.thread.start()
        deadline = time.monotonic() + 120
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the API did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *_: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
