"""The best-effort answer from retrieval alone, and how every diagnosis is recorded."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import pytest

from denpex.hybrid.path import HybridPath
from denpex.hybrid.settings import HybridSettings
from denpex.match.scan import Matcher
from denpex.models import Source, Status
from denpex.pipeline import DiagnoseOptions, diagnose
from denpex.retrieval.embedder import SentenceTransformerEmbedder
from denpex.signatures.library import CATALOG_SUFFIX
from denpex.store.schema import CurationState
from denpex.store.store import store_url
from tests.conftest import BAD_SAMPLE, cache_dir, cached_library
from tests.hybrid.support import (
    answering_path,
    case_inputs,
    round_trip_differences,
    unsettled_matcher,
)


def _lines_of(path: str) -> list[str]:
    return Path(path).read_text(encoding="utf-8", errors="replace").splitlines()


def test_a_failure_no_signature_settles_is_answered_from_similar_incidents(indexed) -> None:
    recorder, cases = indexed
    own = cases["ckpt-size"].incident_id
    path = answering_path(recorder, exclude=[own], record=True)
    diagnosis = diagnose(case_inputs("ckpt-size"), matcher=unsettled_matcher(), hybrid=path)
    top = diagnosis.root_causes[0]
    assert diagnosis.status is Status.best_effort
    assert (top.failure_class, top.source, top.best_effort) == (
        "checkpoint_mismatch",
        Source.retrieval,
        True,
    )
    assert top.signature_id is None
    assert 0.5 < top.confidence <= 1.0
    assert "Error(s) in loading state_dict" in top.evidence[0].text
    for line in top.evidence:
        assert _lines_of(line.source)[line.line - 1] == line.text
    assert all(n.startswith("Compare with the nearest incident") for n in top.next_steps[:1])
    assert diagnosis.summary.startswith("Best effort, not settled by a signature: likely")
    assert "nearest past incident" in diagnosis.summary
    queued = recorder.store.get(diagnosis.curation_id)
    assert queued.curation_state == CurationState.queued
    # The queue holds the diagnosis as it was answered, read back from its JSON.
    assert queued.diagnosis == diagnosis
    assert round_trip_differences(diagnosis) == []


def test_the_origin_comes_from_this_runs_evidence_never_from_a_neighbour(indexed) -> None:
    recorder, cases = indexed
    path = answering_path(recorder, exclude=[cases["stall-rank1"].incident_id])
    strict = DiagnoseOptions(confidence_threshold=0.95)
    rules_only = diagnose(case_inputs("stall-rank1"), strict)
    diagnosis = diagnose(case_inputs("stall-rank1"), strict, hybrid=path)
    top = diagnosis.root_causes[0]
    assert rules_only.status is Status.unknown
    assert (top.failure_class, top.source) == ("collective_timeout", Source.retrieval)
    # The rules named the stalled rank for this class; retrieval keeps it.
    assert top.originating_rank == rules_only.root_causes[0].originating_rank == 1
    # No rules candidate names a rank here: the abnormal lines' attribution does. Only rank 1
    # printed an exception (its state_dict error); the others reported its lost connection.
    other = diagnose(
        case_inputs("ckpt-size"),
        matcher=unsettled_matcher(),
        hybrid=answering_path(recorder, exclude=[cases["ckpt-size"].incident_id]),
    )
    assert other.status is Status.best_effort
    assert other.root_causes[0].originating_rank == 1


def test_a_failure_the_rules_settle_is_recorded_but_not_queued(indexed) -> None:
    recorder, _ = indexed
    path = answering_path(recorder, record=True)
    diagnosis = diagnose([str(BAD_SAMPLE)], hybrid=path)
    assert diagnosis.status is Status.confident
    assert diagnosis.curation_id is None
    stored = recorder.store.list_incidents(CurationState.not_queued, limit=1)[0]
    assert stored.status == "confident"
    assert stored.summary == diagnosis.summary


def test_without_any_similar_incident_the_answer_stays_unknown_and_is_queued(
    tmp_path: Path, embedder
) -> None:
    url = store_url(str(tmp_path / "empty.db"))
    path = HybridPath(HybridSettings(store_url=url), embedder=embedder)
    diagnosis = diagnose(
        case_inputs("exc-keyerror"), DiagnoseOptions(confidence_threshold=0.7), hybrid=path
    )
    assert diagnosis.status is Status.unknown
    assert "No similar past incident with a known cause was found" in diagnosis.summary
    assert diagnosis.root_causes[0].source is Source.rules
    assert path.store.get(diagnosis.curation_id).curation_state == CurationState.queued


def _blind_to_exc_keyerror() -> Matcher:
    """A matcher that explains none of exc-keyerror's lines."""
    library = cached_library()
    # The families that read this case's lines, and the catalogs, which have none of them but
    # would make this matcher a second compile of the whole library.
    families = {signature_id.split(".", 1)[0] for signature_id in library.ids()}
    catalogs = {family for family in families if family.endswith(CATALOG_SUFFIX)}
    return Matcher(
        library.without_families(["python", "gloo", "torchelastic", "c10d", *catalogs]),
        cache_dir=cache_dir(),
    )


def test_a_failure_with_only_unmatched_lines_is_queued_as_unknown(tmp_path: Path, embedder) -> None:
    nothing = _blind_to_exc_keyerror()
    url = store_url(str(tmp_path / "empty.db"))
    path = HybridPath(HybridSettings(store_url=url), embedder=embedder)
    diagnosis = diagnose(case_inputs("exc-keyerror"), matcher=nothing, hybrid=path)
    assert diagnosis.status is Status.unknown
    assert "No failure signature matched, but" in diagnosis.summary
    (unexplained,) = diagnosis.root_causes
    assert unexplained.failure_class == "unknown"
    assert any("KeyError: 'label'" in line.text for line in unexplained.evidence)
    assert unexplained.originating_rank == 1  # only rank 1 printed an exception
    assert diagnosis.curation_id is not None


def test_an_unmatched_error_of_the_only_rank_at_hand_leaves_it_a_candidate(
    tmp_path: Path,
) -> None:
    # A post that quotes one rank's traceback: whether the other ranks met the same error is
    # not shown, so the rank that printed it is not named as where it began.
    (launcher,) = case_inputs("exc-keyerror")
    quoted = [line for line in Path(launcher).read_text().splitlines() if "[rank1]:" in line]
    (tmp_path / "post.log").write_text("\n".join(quoted) + "\n")
    diagnosis = diagnose([str(tmp_path / "post.log")], matcher=_blind_to_exc_keyerror())
    (unexplained,) = diagnosis.root_causes
    assert unexplained.failure_class == "unknown"
    assert unexplained.originating_rank is None
    assert unexplained.candidate_ranks == [1]
    assert "only rank 1's output is in evidence" in unexplained.candidate_reason


# Real line (public issue pytorch/pytorch#76287): an elastic agent after the node hosting the
# rendezvous store went away.
_HEARTBEAT_LOST = (
    "WARNING:torch.distributed.elastic.rendezvous.dynamic_rendezvous:The node "
    "'jean-zay-iam37-ib0_187281_0' has failed to send a keep-alive heartbeat to the rendezvous "
    "'none' due to an error of type RendezvousConnectionError.\n"
)


def test_words_on_a_line_a_signature_read_do_not_outvote_its_reading(
    tmp_path: Path, embedder
) -> None:
    # The signature reads the line as a lost peer (the store's host died); the word
    # "rendezvous" on the same line is no second witness for a rendezvous failure.
    (tmp_path / "agent.log").write_text(_HEARTBEAT_LOST * 3)
    url = store_url(str(tmp_path / "empty.db"))
    path = HybridPath(HybridSettings(store_url=url), embedder=embedder)
    diagnosis = diagnose([str(tmp_path / "agent.log")], hybrid=path)
    assert diagnosis.status is not Status.confident
    assert diagnosis.root_causes[0].failure_class == "peer_process_died"
    assert diagnosis.root_causes[0].signature_id == "rendezvous.elastic_store_lost"


def test_a_clean_run_stays_no_failure_and_is_not_queued(tmp_path: Path, embedder) -> None:
    url = store_url(str(tmp_path / "s.db"))
    path = HybridPath(HybridSettings(store_url=url), embedder=embedder)
    diagnosis = diagnose(case_inputs("clean"), hybrid=path)
    assert diagnosis.status is Status.no_failure
    assert diagnosis.curation_id is None
    assert path.store.list_incidents(CurationState.not_queued)[0].status == "no_failure"


def test_standard_input_is_read_twice_and_digested(tmp_path: Path, embedder) -> None:
    launcher = Path(case_inputs("killed-rank1")[0])
    data = launcher.read_bytes()
    url = store_url(str(tmp_path / "s.db"))
    path = HybridPath(HybridSettings(store_url=url), embedder=embedder)
    diagnosis = diagnose(["-"], stdin=io.BytesIO(data), hybrid=path)
    incident = path.store.list_incidents(None)[0]
    stored = path.store.get(incident.id)
    assert stored.inputs[0].sha256 == hashlib.sha256(data).hexdigest()
    assert any("Signal 9 (SIGKILL)" in line.text for line in stored.excerpt)
    assert diagnosis.status in (Status.unknown, Status.confident, Status.best_effort)


def test_a_missing_embedding_model_degrades_to_the_rules_answer(tmp_path: Path) -> None:
    broken = SentenceTransformerEmbedder(tmp_path / "no-model-here")
    url = store_url(str(tmp_path / "s.db"))
    path = HybridPath(HybridSettings(store_url=url), embedder=broken)
    diagnosis = diagnose(
        case_inputs("exc-keyerror"), DiagnoseOptions(confidence_threshold=0.7), hybrid=path
    )
    assert all(cause.source is not Source.retrieval for cause in diagnosis.root_causes)
    assert any(w.startswith("similar incidents unavailable") for w in diagnosis.warnings)
    assert diagnosis.curation_id is not None


def test_neighbours_below_the_minimum_similarity_are_not_evidence(indexed) -> None:
    recorder, cases = indexed
    path = answering_path(
        recorder, exclude=[cases["exc-keyerror"].incident_id], min_similarity=0.99
    )
    diagnosis = diagnose(
        case_inputs("exc-keyerror"), DiagnoseOptions(confidence_threshold=0.7), hybrid=path
    )
    assert diagnosis.status is Status.unknown
    assert any("no past incident is similar enough" in w for w in diagnosis.warnings)


@pytest.mark.parametrize("status", [Status.unknown, Status.no_failure])
def test_the_gate_asks_the_provider_only_when_the_rules_are_not_confident(status) -> None:
    asked: list[Status] = []

    class Spy:
        def best_effort(self, uncertain, timeline):
            asked.append(uncertain.status)
            return uncertain

        def record(self, diagnosis, timeline):
            return diagnosis

        def abnormal(self, timeline):
            return []

    class Hybrid:
        def abnormal_lines(self, backend, cache_dir):
            return None  # the spy looks at no line beyond the rules' matches

        def case(self, evidence):
            return Spy()

    settled = diagnose([str(BAD_SAMPLE)], hybrid=Hybrid())
    assert settled.status is Status.confident and asked == []
    paths = case_inputs("clean") if status is Status.no_failure else case_inputs("exc-keyerror")
    diagnose(paths, DiagnoseOptions(confidence_threshold=0.7), hybrid=Hybrid())
    assert asked == [status]
