"""The queue groups incidents that printed the same failure, most recurrent first."""

from __future__ import annotations

from denpex.curation.queue import build_queue, grouped_lines
from denpex.store.records import Incident
from tests.curation.conftest import Recorded, record
from tests.hybrid.support import CORPUS

GENERIC = "python.uncaught_exception"


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


def _triton_line_read_by(incident: Incident, reader: str | None) -> Incident:
    """The incident as a library records it whose only reader of the Triton line is `reader`:
    a generic fallback, or nothing (None: the line is one the lexicon found abnormal)."""
    lines = [
        line.model_copy(
            update={
                "role": "root_cause" if reader else "abnormal",
                "signature_id": reader,
                "fallback": reader is not None,
            }
        )
        if "OutOfResources" in line.text
        else line
        for line in incident.excerpt
    ]
    return incident.model_copy(update={"excerpt": lines})


def test_a_line_read_only_by_the_generic_exception_reader_is_grouped_by_as_an_unread_one(
    recorded: Recorded,
) -> None:
    # The sglang run: the Triton line, the server's own notices (symptoms) and the shell's
    # Killed line, which a specific signature reads as the root cause.
    server = recorded.store.get(recorded.ids["sglang-8513.log"])
    unread = grouped_lines(_triton_line_read_by(server, None))
    read = grouped_lines(_triton_line_read_by(server, GENERIC))
    assert read == unread
    assert any("OutOfResources: out of resource: shared memory" in text for text in read)
    # What a specific signature settled is not what the incident is grouped by.
    assert not any(" Killed " in text for text in read)
