"""What the reasoning knows about each failure class is data in taxonomy.yaml, read in one place;
a signature states what its lines say beyond the class default."""

from __future__ import annotations

import yaml

from denpex.signatures.library import default_rules_dir
from denpex.signatures.signature import Maturity, Signature
from denpex.taxonomy import Relay, class_of_dump_kind, classes, traits
from tests.conftest import cached_library


def _signature(path: str, **changes: object) -> Signature:
    raw = yaml.safe_load((default_rules_dir() / path).read_text())
    return Signature.model_validate({**raw, **changes})


def test_the_job_wide_and_scheduler_classes_are_stated_in_the_taxonomy() -> None:
    job_wide = {c for c, f in classes().items() if f.traits.job_wide}
    # A network setting is the job's or a host's: the rank that noticed it is not its origin
    # (one node's interface still names that node: the host is kept).
    assert {"checkpoint_mismatch", "ddp_usage_error", "rendezvous_failure"} <= job_wide
    assert "network_config_error" in job_wide
    assert "gpu_fell_off_bus" not in job_wide  # a fault of one device is where it happened
    on_job = {c for c, f in classes().items() if f.traits.acts_on_job}
    assert {"preemption", "time_limit", "node_failure"} <= on_job
    assert "process_killed" not in on_job


def test_relayed_symptoms_are_told_apart_from_those_of_the_process_itself() -> None:
    assert traits("collective_timeout").relay is Relay.waiting
    assert traits("peer_process_died").relay is Relay.peer
    assert traits("nccl_internal_error").relay is Relay.relayed
    assert traits("dataloader_worker_died").relay is None


def test_symptom_only_confidence_moves_with_the_suspects_left() -> None:
    stalled = traits("collective_timeout").symptom_confidence
    assert stalled.for_suspects(1) > stalled.for_suspects(3) > stalled.for_suspects(0)
    assert traits("python_exception").symptom_confidence.for_suspects(1) == 0.4  # the default


def test_flight_recorder_kinds_map_to_classes_in_the_taxonomy() -> None:
    assert class_of_dump_kind("mismatched") == "collective_mismatch"
    assert class_of_dump_kind("never_entered") == "collective_timeout"
    assert class_of_dump_kind("never_entered", slowing=True) == "straggler"
    assert class_of_dump_kind("stalled", slowing=True) == "collective_timeout"


def test_a_signature_states_what_the_class_default_does_not() -> None:
    plain = _signature("checkpoint/missing_keys.yaml")
    assert plain.traits.job_wide and plain.traits.locates_origin
    named = _signature("checkpoint/missing_keys.yaml", job_wide=False, locates_origin=False)
    assert not named.traits.job_wide
    assert not named.traits.locates_origin
    assert named.traits.relay is plain.traits.relay  # what it does not state stays the class's


def test_experimental_signatures_take_part_only_when_asked() -> None:
    experimental = {
        s.id
        for s in cached_library(include_experimental=True).signatures
        if s.status is Maturity.experimental
    }
    assert experimental, "the bundled library has experimental signatures to test this on"
    assert not experimental & set(cached_library().ids())
