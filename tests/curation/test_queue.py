"""The queue groups incidents that printed the same failure, most recurrent first."""

from __future__ import annotations

from denpex.curation.queue import build_queue
from tests.curation.conftest import Recorded, record
from tests.hybrid.support import CORPUS


def test_alike_incidents_are_one_group_with_evidence_draft_and_similar_incidents(
    recorded: Recorded,
) -> None:
    # A third queued incident of another failure: a missing checkpoint, which the rules are
    # not asked to be sure of.
    other = record(recorded.store, [CORPUS / "ckpt-missing"], threshold=0.99)
    groups = build_queue(recorded.store)
    assert [len(g.incidents) for g in groups] == [2, 1]
    triton, missing = groups
    assert {i.id for i in triton.incidents} == {
        recorded.ids["lmdeploy-3992.log"],
        recorded.ids["monkeyocr-86.log"],
    }
    assert {i.id for i in missing.incidents} == set(other.values())
    assert "OutOfResources: out of resource: shared memory" in triton.evidence[0].text
    assert triton.representative.diagnosis.status.value == "unknown"
    # The sglang run printed the same line; the rules settled it (process_killed), so it is
    # not queued, but it is the group's similar incident.
    (similar,) = triton.similar
    assert similar.incident_id == recorded.ids["sglang-8513.log"]
    assert (similar.curation_state, similar.label) == ("not_queued", "process_killed")
    document = triton.as_dict()
    assert document["recurrence"] == 2 and document["best_effort"]["status"] == "unknown"


def test_a_rejected_incident_leaves_the_queue(recorded: Recorded) -> None:
    recorded.store.reject(recorded.ids["lmdeploy-3992.log"], by="oncall", note="duplicate")
    (group,) = build_queue(recorded.store)
    assert [i.id for i in group.incidents] == [recorded.ids["monkeyocr-86.log"]]
    rejected = recorded.store.get(recorded.ids["lmdeploy-3992.log"])
    assert rejected.curation_state == "rejected"
    assert rejected.curation_note == "rejected by oncall: duplicate"
