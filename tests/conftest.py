"""Shared fixtures: the bundled example and the signature library, loaded once."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from denpex.match.library import Library, load_library
from denpex.match.scan import Matcher

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
BAD_SAMPLE = EXAMPLES / "torchrun-bad-sample"

# Nothing in the test suite may reach the network or download weights, or write to $HOME.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ["DENPEX_CACHE_DIR"] = tempfile.mkdtemp(prefix="denpex-test-cache-")


@pytest.fixture(scope="session")
def library() -> Library:
    return load_library()


@pytest.fixture(scope="session")
def matcher(library: Library) -> Matcher:
    return Matcher(library)
