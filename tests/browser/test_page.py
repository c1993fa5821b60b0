"""The paste-or-drop page and the API docs, in headless Chromium, served by the real API."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from denpex.api.app import ApiSettings, create_app
from denpex.auth import tenants_from_config
from tests.browser.conftest import Served, Watched
from tests.conftest import BAD_SAMPLE

pytestmark = pytest.mark.slow

SECRET = "acme-secret-0123456789"


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    settings = ApiSettings(
        tenants=tenants_from_config({"acme": SECRET}),
        cache_dir=Path(os.environ["DENPEX_CACHE_DIR"]),
        job_threshold_bytes=16 * 1024,
    )
    with Served(create_app(settings)) as server:
        yield server


def _sign_in(watched: Watched, served: Served, secret: str = SECRET) -> None:
    watched.page.goto(served.url + "/")
    watched.page.fill("#tenant", "acme")
    watched.page.fill("#secret", secret)


def test_pasted_logs_come_back_as_the_report_naming_the_culprit(
    watched: Watched, served: Served
) -> None:
    _sign_in(watched, served)
    watched.page.fill("#log", (BAD_SAMPLE / "launcher.log").read_text())
    watched.page.click("#go")
    frame = watched.page.frame_locator("#report")
    culprit = frame.locator("g.lane.culprit")
    culprit.wait_for(timeout=60_000)
    assert culprit.get_attribute("data-rank") == "3"
    assert "data_preprocessing_error" in frame.locator("body").inner_text()
    assert watched.page.text_content("#status").startswith("confident: diagnosis ")
    assert watched.errors == [] and watched.outside == []


def test_a_dropped_archive_over_the_job_threshold_is_followed_to_its_report(
    watched: Watched, served: Served, tmp_path: Path
) -> None:
    import tarfile

    bundle = tmp_path / "job.tar.gz"
    with tarfile.open(bundle, "w:gz") as archive:
        archive.add(BAD_SAMPLE, arcname="job")
        filler = tmp_path / "filler.log"  # past the 16 KiB threshold even when compressed
        filler.write_bytes(os.urandom(24 * 1024).hex().encode())
        archive.add(filler, arcname="job/filler.log")
    _sign_in(watched, served)
    watched.page.set_input_files("#file", str(bundle))
    # Locator waits, not wait_for_function: the page's CSP forbids the eval that Playwright's
    # string predicates need once they poll.
    watched.page.locator("#status", has_text="ready").wait_for()
    watched.page.click("#go")
    culprit = watched.page.frame_locator("#report").locator("g.lane.culprit")
    culprit.wait_for(timeout=90_000)
    assert culprit.get_attribute("data-rank") == "3"
    assert watched.errors == [] and watched.outside == []


def test_a_wrong_secret_is_said_in_one_line_on_the_page(watched: Watched, served: Served) -> None:
    _sign_in(watched, served, secret="not-the-secret-000000")
    watched.page.fill("#log", "[rank1]: RuntimeError: boom\n")
    watched.page.click("#go")
    watched.page.locator("#status.error").wait_for(timeout=60_000)
    assert "401: the request is not signed by a known tenant" in watched.page.text_content(
        "#status"
    )
    # The 401 itself is the only console message a browser logs for a refused fetch.
    assert all("401" in error for error in watched.errors) and watched.outside == []


def test_the_api_docs_render_offline(watched: Watched, served: Served) -> None:
    watched.page.goto(served.url + "/docs")
    watched.page.locator(".opblock-summary-path", has_text="/v1/diagnoses").first.wait_for()
    assert watched.page.locator(".opblock-summary-path", has_text="/v1/hangs").count() == 1
    assert watched.errors == [] and watched.outside == []
