"""Incidents of a real failure no packaged signature knows, recorded as denpex records them.

`tests/curation/novel/` holds Triton's shared-memory limit as three public threads quoted it
(README.md there). Since Triton's own messages were catalogued (rules/triton_cat), the packaged
library knows it: the loop is walked on the library as it stood before that catalog
(`rules_before_triton`, the packaged families less triton_cat), which is what a deployment meets
with any failure its library does not know yet. The store records each diagnosis as the hybrid
path does (the best effort itself is not needed here: `answer=False`), so the first two are
queued and the third, settled by the shell's `Killed` line, is not. That library reads the
Triton line only with its generic fallback (python.uncaught_exception, any module-qualified
exception): the first two are its best guess (python_exception 0.45, unknown), and in the third
it is the close rival of the `Killed` line, a bare SIGKILL of 0.55 lowered to 0.45, so the
third is recorded at a threshold of 0.4, as a deployment that settles such lines would.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from denpex.curation.settings import CurationSettings
from denpex.hybrid.path import HybridPath
from denpex.hybrid.settings import HybridSettings
from denpex.match.compiled import compiled_matcher
from denpex.match.scan import Matcher
from denpex.pipeline import DiagnoseOptions, diagnose
from denpex.retrieval.embedder import SentenceTransformerEmbedder
from denpex.signatures.library import default_rules_dir
from denpex.store.store import IncidentStore, open_store, store_url
from tests.conftest import REPO, cache_dir

NOVEL = Path(__file__).resolve().parent / "novel"
LMDEPLOY = NOVEL / "lmdeploy-3992.log"
MONKEYOCR = NOVEL / "monkeyocr-86.log"
SGLANG = NOVEL / "sglang-8513.log"
EVALS = (REPO / "evals" / "corpus", REPO / "evals" / "heldout")
HEALTHY = (REPO / "evals" / "healthy",)


def rules_before_triton() -> Path:
    """The packaged library less Triton's catalog: a folder of links to its families, kept in
    the session's cache folder so that its parsed and compiled forms are made once."""
    folder = cache_dir() / "rules-before-triton"
    if folder.is_dir():
        return folder
    building = folder.with_name(f"{folder.name}.{os.getpid()}")
    building.mkdir(parents=True)
    for entry in default_rules_dir().iterdir():
        if entry.name != "triton_cat":
            (building / entry.name).symlink_to(entry)
    try:
        building.rename(folder)
    except OSError:  # another test process made it first
        for link in building.iterdir():
            link.unlink()
        building.rmdir()
    return folder


def before_triton_matcher() -> Matcher:
    """That library compiled for the `re` backend, the one curation is configured with here
    (`curation_settings`): its regexes are compiled once per process and shared with the
    back-tests', where Hyperscan would compile a database of 50,000 patterns for this library
    alone (a minute of CPU). The backends find the same matches (tests/match, rules lint)."""
    return compiled_matcher(rules_before_triton(), backend="re", cache_dir=cache_dir())


@dataclass
class Recorded:
    store: IncidentStore
    settings: CurationSettings
    ids: dict[str, str]
    """Incident id per log file name."""


def record(store: IncidentStore, paths: list[Path], threshold: float = 0.6) -> dict[str, str]:
    """Diagnoses each log as `denpex diagnose --store` does and returns the incident ids."""
    settings = HybridSettings(store_url=store.url)
    # The embedder is named, never loaded: recording does not embed.
    path = HybridPath(settings, store=store, embedder=SentenceTransformerEmbedder(), answer=False)
    ids: dict[str, str] = {}
    for log in paths:
        before = {i.id for i in store.in_state([])}
        diagnose(
            [str(log)],
            DiagnoseOptions(confidence_threshold=threshold),
            matcher=before_triton_matcher(),
            hybrid=path,
        )
        (ids[log.name],) = {i.id for i in store.in_state([])} - before
    return ids


def curation_settings(tmp_path: Path, store: IncidentStore) -> CurationSettings:
    return CurationSettings(
        store_url=store.url,
        overlay_dir=tmp_path / "overlay",
        eval_dirs=EVALS,
        healthy=HEALTHY,
        rules_dir=rules_before_triton(),
        cache_dir=cache_dir(),
        backend="re",
    )


@pytest.fixture
def recorded(tmp_path: Path) -> Recorded:
    store = open_store(store_url(str(tmp_path / "incidents.db")))
    ids = record(store, [LMDEPLOY, MONKEYOCR]) | record(store, [SGLANG], threshold=0.4)
    yield Recorded(store, curation_settings(tmp_path, store), ids)
    store.close()
