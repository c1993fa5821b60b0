"""Shared fixtures: the bundled example and the signature library, loaded once."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from denpex.match.compiled import compiled_matcher
from denpex.match.scan import Matcher
from denpex.models import Diagnosis
from denpex.pipeline import DiagnoseOptions, diagnose
from denpex.signatures.library import Library, load_library

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
BAD_SAMPLE = EXAMPLES / "torchrun-bad-sample"

# Nothing in the test suite may reach the network or download weights, or write to $HOME.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ["DENPEX_CACHE_DIR"] = tempfile.mkdtemp(prefix="denpex-test-cache-")
os.environ["DENPEX_DATA_DIR"] = tempfile.mkdtemp(prefix="denpex-test-data-")
# The default incident store is for people; tests that want one name it (or unset this).
os.environ["DENPEX_STORE"] = "off"


def pytest_configure(config: pytest.Config) -> None:
    """The parsed library and compiled scanner databases are kept between runs in pytest's own
    cache folder (`.pytest_cache`, ignored by git), so a run does not parse 10,000 signature
    files and compile them again (a minute on the shared 2-core machine). Every file there is
    named by the content it was built from, as in a user's cache, so an edited rule is never
    served stale. With `-p no:cacheprovider` the session keeps its scratch folder."""
    cache = getattr(config, "cache", None)
    if cache is not None:
        os.environ["DENPEX_CACHE_DIR"] = str(cache.mkdir("denpex-compiled-library"))


def cache_dir() -> Path:
    """The session's cache folder (see `pytest_configure`)."""
    return Path(os.environ["DENPEX_CACHE_DIR"])


def cached_library(**options: object) -> Library:
    """`load_library` from the session's cache: parsing 10,000 signature files takes seconds."""
    return load_library(cache_dir=cache_dir(), **options)  # type: ignore[arg-type]


def bundled_matcher() -> Matcher:
    """The bundled library, compiled once per test session (and shared with every in-process
    `diagnose` that is not given a matcher); the compiled database is kept in the session's
    cache directory, where the CLI's subprocesses find it."""
    return compiled_matcher(cache_dir=cache_dir())


def diagnose_paths(paths: list[str], **options: object) -> Diagnosis:
    """`denpex diagnose` in-process, with the session's compiled library."""
    return diagnose(paths, DiagnoseOptions(**options), matcher=bundled_matcher())  # type: ignore[arg-type]


def write_job(root: Path, files: dict[str, str]) -> Path:
    """A job's log folder assembled from real lines: {relative path: text}."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.fixture(scope="session")
def compiled_once() -> Matcher:
    """For tests that call `diagnose` or `hang_from_paths` with no matcher: those take the
    library this process compiled, and compiled here it comes from the session's cache rather
    than from 10,000 YAML files."""
    return bundled_matcher()


@pytest.fixture(scope="session")
def library() -> Library:
    return bundled_matcher().library


@pytest.fixture(scope="session")
def matcher() -> Matcher:
    return bundled_matcher()
