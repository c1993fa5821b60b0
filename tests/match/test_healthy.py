"""No root-cause signature fires on logs of runs that succeeded.

Precision is the product: a signature that fires on healthy chatter would blame a healthy run.
The healthy set is `evals/healthy/` plus every corpus case labelled `"expect_failure": false`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from denpex.match.scan import Matcher
from denpex.models import Status
from denpex.pipeline import scan_inputs
from denpex.signatures.signature import Role
from tests.conftest import REPO, diagnose_paths

HEALTHY = REPO / "evals" / "healthy"
CORPUS = REPO / "evals" / "corpus"


def _healthy_inputs() -> list[Path]:
    logs = [p for p in sorted(HEALTHY.iterdir()) if p.name != "README.md"]
    clean_cases = [
        p.parent
        for p in sorted(CORPUS.glob("*/expected.json"))
        if not json.loads(p.read_text()).get("expect_failure", True)
    ]
    return logs + clean_cases


HEALTHY_INPUTS = _healthy_inputs()


def test_there_are_healthy_logs_to_check() -> None:
    assert HEALTHY_INPUTS


@pytest.mark.parametrize("path", HEALTHY_INPUTS, ids=lambda p: p.name)
def test_no_root_cause_fires_on_a_healthy_run(path: Path, matcher: Matcher) -> None:
    scan = scan_inputs([str(path)], matcher)
    fired = sorted(
        f"{m.signature_id} at {m.event.source}:{m.event.line}: {m.event.text[:100]}"
        for m in scan.matches
        if m.role is Role.root_cause
    )
    assert fired == []


@pytest.mark.parametrize("path", HEALTHY_INPUTS, ids=lambda p: p.name)
def test_a_healthy_run_is_diagnosed_as_no_failure(path: Path) -> None:
    assert diagnose_paths([str(path)]).status is Status.no_failure


@pytest.mark.parametrize("path", HEALTHY_INPUTS, ids=lambda p: p.name)
def test_no_catalog_signature_reports_a_failure_on_a_healthy_run(
    path: Path, matcher: Matcher
) -> None:
    """Signatures generated from emitters' source (catalogs/) are many and generic: on a
    healthy run none of them may report a root cause or a symptom."""
    scan = scan_inputs([str(path)], matcher)
    fired = sorted(
        f"{m.signature_id} at {m.event.source}:{m.event.line}: {m.event.text[:100]}"
        for m in scan.matches
        if m.signature.generated and m.role is not Role.context
    )
    assert fired == []
