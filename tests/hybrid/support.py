"""Helpers shared by the store, retrieval and hybrid tests: real cases, observed as denpex does."""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from denpex.evidence import EvidenceOptions, assemble
from denpex.hybrid.excerpt import build_excerpt, query_templates
from denpex.hybrid.harvest import abnormal_lines
from denpex.match.scan import Matcher
from denpex.models import Diagnosis
from denpex.pipeline import DiagnoseOptions, diagnose_evidence
from denpex.retrieval.corpus import load_cases
from denpex.store.records import ExcerptLine, IncidentDraft, input_digests
from tests.conftest import bundled_matcher

CORPUS = Path(__file__).resolve().parent / "corpus"

# The families that settle the fixture cases outright (exceptions, checkpoint loading,
# DataLoader errors), and Transformers' catalog, which prints torch's "Error(s) in loading
# state_dict" itself; without them the rules are unsure and the hybrid path answers.
UNSETTLED = ("python", "checkpoint", "dataloader", "transformers_cat")


@cache
def unsettled_matcher() -> Matcher:
    """The bundled library less UNSETTLED, made when a test first asks (not at collection, in
    every worker): the compiled library told to drop those families' patterns, which reads as
    the smaller library compiled on its own (tests/match/test_ablation.py) without a second
    compile of 50,000 patterns."""
    return bundled_matcher().without_families(list(UNSETTLED))


def case_inputs(name: str) -> list[str]:
    """The log files of a fixture case (expected.json excluded)."""
    return next(list(c.inputs) for c in load_cases(CORPUS) if c.name == name)


@dataclass(frozen=True)
class Observed:
    diagnosis: Diagnosis
    excerpt: list[ExcerptLine]
    templates: list[str]
    digests: dict[str, str]


def observe(paths: list[str], threshold: float = 0.6) -> Observed:
    """The rules' diagnosis of real logs, with the excerpt the hybrid path would build."""
    matcher = bundled_matcher()
    evidence = assemble(paths, matcher, EvidenceOptions(abnormal=abnormal_lines(), digests=True))
    diagnosis = diagnose_evidence(
        evidence, DiagnoseOptions(confidence_threshold=threshold), time.perf_counter()
    )
    excerpt = build_excerpt(evidence.timeline, list(evidence.abnormal))
    return Observed(diagnosis, excerpt, query_templates(excerpt), dict(evidence.digests))


def draft_of(observed: Observed, *, queue: bool = False) -> IncidentDraft:
    return IncidentDraft(
        diagnosis=observed.diagnosis,
        inputs=input_digests(observed.diagnosis.inputs, observed.digests),
        excerpt=observed.excerpt,
        templates=observed.templates,
        embedder="all-MiniLM-L6-v2",
        queue=queue,
    )


# Fixture cases enough to exercise every measure of the hybrid evaluations quickly.
QUICK_SUBSET = [
    "ckpt-missing",
    "ckpt-size",
    "ckpt-unexpected",
    "killed-rank0",
    "killed-rank1",
    "exc-keyerror",
    "clean",
]


def copy_cases(names: list[str], target: Path) -> Path:
    """A corpus holding only some fixture cases, for tests that must stay quick."""
    for name in names:
        shutil.copytree(CORPUS / name, target / name)
    return target


def answering_path(recorder, *, chat=None, exclude=(), record=False, min_similarity=0.4):
    """A hybrid path that answers from the recorder's store and index (shared, not copied)."""
    from dataclasses import replace

    from denpex.hybrid.path import HybridPath

    return HybridPath(
        replace(recorder.settings, min_similarity=min_similarity),
        store=recorder.store,
        embedder=recorder.embedder,
        index=recorder.similar.index,
        chat=chat,
        answer=True,
        record=record,
        exclude=frozenset(exclude),
    )


def round_trip_differences(diagnosis: Diagnosis) -> list[str]:
    """Where a diagnosis differs from itself read back from its JSON (empty when it round-trips):
    every consumer reads the JSON, so what does not survive it is not in the contract."""
    back = Diagnosis.model_validate_json(diagnosis.model_dump_json())
    found: list[str] = []

    def compare(mine: object, theirs: object, where: str) -> None:
        if isinstance(mine, dict) and isinstance(theirs, dict):
            for key in mine.keys() | theirs.keys():
                compare(mine.get(key), theirs.get(key), f"{where}.{key}")
        elif isinstance(mine, list) and isinstance(theirs, list) and len(mine) == len(theirs):
            for index, (one, other) in enumerate(zip(mine, theirs, strict=True)):
                compare(one, other, f"{where}[{index}]")
        elif mine != theirs or type(mine) is not type(theirs):
            found.append(f"{where}: {mine!r} ({type(mine).__name__}) != {theirs!r}")

    compare(diagnosis.model_dump(), back.model_dump(), "diagnosis")
    return found
