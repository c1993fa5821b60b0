"""A draft is back-tested, then promoted into the overlay, or refused with the reasons."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from denpex.curation.backtest import backtest
from denpex.curation.errors import CurationError, PromotionRefused
from denpex.curation.promote import current_library, parse_draft, promote
from denpex.curation.propose import Draft, propose
from denpex.pipeline import DiagnoseOptions
from denpex.reason.confidence import CLOSE_RIVAL_PENALTY
from denpex.signatures.library import default_rules_dir, load_library
from tests.conftest import REPO
from tests.curation.conftest import Recorded


def _draft(recorded: Recorded) -> Draft:
    incident = recorded.ids["lmdeploy-3992.log"]
    recorded.store.confirm(incident, "unsupported_gpu_arch", by="oncall")
    return propose(incident, recorded.store, current_library(recorded.settings), recorded.settings)


def _edited(draft: Draft, **changes: object) -> str:
    document = yaml.safe_load(draft.text)
    document.update(changes)
    return yaml.safe_dump(document, sort_keys=False)


def _confident(draft: Draft, rival_prior: float = 0.0) -> str:
    """The answer the draft gives: its prior (the median of its class's signatures), lowered by a
    rival root cause close in time as the reasoning lowers any answer; confident when that stays
    at the default threshold or above."""
    prior = yaml.safe_load(draft.text)["confidence"]
    confidence = round(prior * (1 - CLOSE_RIVAL_PENALTY * rival_prior), 2)
    status = "confident" if confidence >= DiagnoseOptions().confidence_threshold else "unknown"
    return f"{status} unsupported_gpu_arch {confidence:.2f}"


def _promote(recorded: Recorded, text: str):
    return promote(parse_draft(text), text, recorded.store, recorded.settings, by="oncall")


def test_the_backtest_lists_what_the_draft_matches_and_what_it_would_change(
    recorded: Recorded,
) -> None:
    draft = _draft(recorded)
    report = backtest(
        draft.signature, current_library(recorded.settings), recorded.store, recorded.settings
    )
    changes = {hit.where: (str(hit.before), str(hit.after)) for hit in report.incidents}
    assert changes == {
        # Before, only the generic exception reader reads the Triton line; the draft, above it,
        # takes the line.
        recorded.ids["lmdeploy-3992.log"]: ("unknown python_exception 0.45", _confident(draft)),
        recorded.ids["monkeyocr-86.log"]: ("unknown python_exception 0.45", _confident(draft)),
        # Answered by the shell's Killed line today (0.45 beside the uncaught exception, under
        # the threshold); the Triton error came first, and the Killed line stays its close rival.
        recorded.ids["sglang-8513.log"]: (
            "unknown process_killed 0.45",
            _confident(draft, rival_prior=0.55),
        ),
    }
    assert report.evals == [] and report.healthy == []
    assert report.refusals() == []


def test_promotion_writes_the_overlay_versions_it_and_settles_the_queued_incidents(
    recorded: Recorded,
) -> None:
    packaged = sorted(p.name for p in default_rules_dir().iterdir())
    draft = _draft(recorded)
    promotion = _promote(recorded, draft.text)
    overlay = recorded.settings.overlay_dir
    assert promotion.version == 1
    assert promotion.path == overlay / "triton" / "out_of_resources.yaml"
    assert promotion.path.read_text() == draft.text
    assert (overlay / "VERSION").read_text() == "1\n"
    assert sorted(p.name for p in default_rules_dir().iterdir()) == packaged
    # The queued twin is settled by the new signature; the confirmed incident keeps its cause.
    (settled,) = promotion.settled
    assert settled.incident_id == recorded.ids["monkeyocr-86.log"] and settled.resolved
    twin = recorded.store.get(settled.incident_id)
    assert (twin.curation_state, twin.status, twin.settled_by) == (
        "resolved",
        "confident",
        "triton.out_of_resources",
    )
    assert "overlay 1+" in twin.rules_version
    library = load_library(cache_dir=recorded.settings.cache_dir, overlay_dir=overlay)
    assert "triton.out_of_resources" in library.ids()
    assert library.label.endswith(f"overlay 1+{library.overlay.split('+')[1]}")
    # The same id again is refused: a promoted signature is changed by a new one.
    with pytest.raises(PromotionRefused, match="already in the library"):
        _promote(recorded, draft.text)


def test_a_draft_that_fires_on_healthy_logs_is_refused(recorded: Recorded) -> None:
    draft = _draft(recorded)
    # Widened by hand until it also matches torchrun's healthy start-up line.
    loose = _edited(
        draft,
        title="Triton ran out of a GPU resource",
        patterns=[{"regex": r"(?:OutOfResources|Starting elastic_operator with launch configs)"}],
        examples={
            "match": [{"line": draft.signature.examples.match[0].line}],
            "no_match": ["RuntimeError: CUDA error: out of memory"],
        },
    )
    with pytest.raises(PromotionRefused) as refused:
        _promote(recorded, loose)
    assert any(
        "fires on" in reason and "healthy log line(s)" in reason for reason in refused.value.reasons
    )
    assert not (recorded.settings.overlay_dir / "VERSION").exists()


def test_a_draft_that_breaks_rules_lint_is_refused(recorded: Recorded) -> None:
    draft = _draft(recorded)
    matched = draft.signature.examples.match[0].line
    broken = _edited(
        draft,
        examples={"match": [{"line": matched}], "no_match": [matched]},
    )
    with pytest.raises(PromotionRefused) as refused:
        _promote(recorded, broken)
    assert refused.value.reasons == [
        f"breaks denpex rules lint: triton.out_of_resources [{backend}]: no_match example "
        f"matched: {matched[:90]!r}"
        for backend in _backends()
    ]


def test_a_draft_that_changes_a_confirmed_diagnosis_is_refused(recorded: Recorded) -> None:
    draft = _draft(recorded)
    # Meanwhile a curator confirmed the sglang run as killed from outside: the draft, which
    # takes its Triton line for the cause, would change that.
    recorded.store.confirm(recorded.ids["sglang-8513.log"], "process_killed", by="oncall")
    with pytest.raises(PromotionRefused) as refused:
        _promote(recorded, draft.text)
    (reason,) = refused.value.reasons
    assert reason == (
        f"changes the confirmed diagnosis of incident {recorded.ids['sglang-8513.log']} "
        f"(confirmed process_killed): unknown process_killed 0.45 -> "
        f"{_confident(draft, rival_prior=0.55)}"
    )
    # Proposed now, the same incident has no distinctive line left: another class printed it.
    with pytest.raises(CurationError, match="nothing distinctive to draft from"):
        _draft(recorded)


def test_a_draft_that_changes_a_labelled_case_is_refused(recorded: Recorded) -> None:
    draft = _draft(recorded)
    # Retargeted by hand at a line of a labelled KV-cache case, and put above its signature.
    case = REPO / "evals" / "heldout" / "issue-xorbitsai-inference-4926"
    line = next(x for x in (case / "post.log").read_text().splitlines() if "KV cache" in x)
    retargeted = _edited(
        draft,
        title="Triton ran out of a GPU resource",
        priority=95,
        patterns=[{"regex": r"36\.0 GiB KV cache is needed"}],
        examples={
            "match": [{"line": line}],
            "no_match": ["RuntimeError: CUDA error: out of memory"],
        },
    )
    with pytest.raises(PromotionRefused) as refused:
        _promote(recorded, retargeted)
    (reason,) = refused.value.reasons
    assert reason.startswith(
        "changes the confirmed diagnosis of labelled case issue-xorbitsai-inference-4926 "
        "(confirmed kv_cache_exhausted): confident kv_cache_exhausted"
    )
    assert reason.endswith(_confident(draft).split(" ", 1)[1])


def _backends() -> list[str]:
    from denpex.signatures.backends import available_backends

    return available_backends()


def test_the_overlay_never_shadows_a_packaged_signature(tmp_path: Path) -> None:
    from denpex.errors import RulesError

    packaged = default_rules_dir() / "nccl" / "internal_error.yaml"
    (tmp_path / "nccl").mkdir()
    (tmp_path / "nccl" / "internal_error.yaml").write_text(packaged.read_text())
    (tmp_path / "VERSION").write_text("1\n")
    with pytest.raises(RulesError, match=r"nccl\.internal_error is already in the library"):
        load_library(cache_dir=Path(os.environ["DENPEX_CACHE_DIR"]), overlay_dir=tmp_path)
