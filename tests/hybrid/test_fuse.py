"""The best effort fuses the rules' partial answers, retrieval and lexical cues; it never
overrides a specific rules candidate on weak evidence."""

from __future__ import annotations

from denpex.hybrid.fuse import NOT_IN_EVIDENCE, SYMPTOM_ONLY, cue_support, fuse, load_cues
from denpex.models import RootCause, Source
from denpex.retrieval.similar import ClassVote, Neighbour
from denpex.store.records import Label, LabelSource
from denpex.taxonomy import failure_class

# Real lines: an OSError on a full disk (as in evals/corpus/inject-disk-full-checkpoint-fileobj)
# and a c10d watchdog timeout.
NO_SPACE = "[rank0]: OSError: [Errno 28] No space left on device"
WATCHDOG = (
    "[rank3]:[E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=3856, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for "
    "1800268 milliseconds before timing out."
)


def rules(
    cls: str, confidence: float, *, symptom_only: bool = False, reading: bool = False
) -> RootCause:
    fc = failure_class(cls)
    caveat = f"{SYMPTOM_ONLY}: no root-cause record was found." if symptom_only else ""
    return RootCause(
        failure_class=cls,
        category=fc.category,
        signature_id=None,
        confidence=confidence,
        source=Source.rules,
        best_effort=False,
        caveat=f"{NOT_IN_EVIDENCE}. Listed because it often lies behind." if reading else caveat,
        owner=fc.owner,
    )


def votes(*shares: tuple[str, float, float]) -> list[ClassVote]:
    """(class, share, nearest similarity) per class."""
    return [
        ClassVote(
            cls,
            share,
            (
                Neighbour(
                    f"{cls}-1", similarity, Label(failure_class=cls, source=LabelSource.curator)
                ),
            ),
        )
        for cls, share, similarity in shares
    ]


def test_a_specific_rules_candidate_keeps_first_place_against_a_loose_vote() -> None:
    ranked = fuse(
        [rules("checkpoint_mismatch", 0.55)],
        votes(("dependency_error", 0.7, 0.6), ("checkpoint_mismatch", 0.3, 0.5)),
        [WATCHDOG],
    )
    assert ranked[0].failure_class == "checkpoint_mismatch"
    assert {c.failure_class for c in ranked} >= {"checkpoint_mismatch", "dependency_error"}


def test_a_symptom_only_answer_gives_way_to_agreeing_retrieval_and_cues() -> None:
    ranked = fuse(
        [rules("collective_timeout", 0.45, symptom_only=True)],
        votes(("disk_full", 0.8, 0.9), ("collective_timeout", 0.2, 0.5)),
        [NO_SPACE, WATCHDOG],
    )
    assert ranked[0].failure_class == "disk_full"
    assert {source.split(":")[0] for source in ranked[0].support} == {"retrieval", "cue"}
    assert "collective_timeout" in [c.failure_class for c in ranked[1:]]


# Real (public issue huggingface/accelerate#3413): a survivor's view of a peer that vanished.
REMOTE_ERROR = (
    "10.3.0.41: [rank22]: ncclRemoteError: A call failed possibly due to a network error or a "
    "remote process exiting prematurely."
)


def test_an_open_reading_does_not_outrank_the_symptoms_it_was_read_from() -> None:
    ranked = fuse(
        [
            rules("peer_process_died", 0.28, symptom_only=True),
            rules("host_oom", 0.28, reading=True),
        ],
        [],
        [REMOTE_ERROR],
    )
    assert ranked[0].failure_class == "peer_process_died"


def test_past_incidents_that_agree_with_an_open_reading_still_lift_it() -> None:
    ranked = fuse(
        [
            rules("peer_process_died", 0.28, symptom_only=True),
            rules("host_oom", 0.28, reading=True),
        ],
        votes(("host_oom", 0.8, 0.9)),
        [REMOTE_ERROR],
    )
    assert ranked[0].failure_class == "host_oom"


def test_cues_alone_name_a_class_at_low_confidence() -> None:
    ranked = fuse([rules("unknown", 0.05)], [], [NO_SPACE])
    assert ranked[0].failure_class == "disk_full"
    assert 0.0 < ranked[0].confidence < 0.5
    assert "unknown" not in [c.failure_class for c in ranked]


def test_agreeing_witnesses_raise_confidence_and_it_stays_a_probability() -> None:
    alone = fuse([], votes(("disk_full", 0.8, 0.9)), [])[0]
    agreed = fuse([rules("disk_full", 0.5)], votes(("disk_full", 0.8, 0.9)), [NO_SPACE])[0]
    assert alone.confidence < agreed.confidence <= 1.0


def test_every_cue_names_taxonomy_classes() -> None:
    for cue in load_cues().cues:
        for cls in cue.classes:
            assert failure_class(cls).id == cls


def test_a_missing_attribute_is_a_version_cue_only_when_a_module_lacks_it() -> None:
    # Real lines: torch_xla's checkpointing on PyTorch 2.1 (aws-neuron-sdk's troubleshooting
    # page) and nanotron's trainer reading the loss on a pipeline stage that has none
    # (public issue huggingface/nanotron#405).
    skew = "AttributeError: module 'torch' has no attribute 'xla'"
    none = "[rank0]: AttributeError: 'NoneType' object has no attribute 'item'"
    assert "dependency_error" in cue_support([skew], load_cues())
    assert "dependency_error" not in cue_support([none], load_cues())


def test_glibc_s_heap_checks_are_a_native_crash_cue_not_corrupt_data() -> None:
    # Real lines (public issue NVIDIA/nccl#1611): glibc's heap check, then Open MPI's handler.
    heap = "free(): corrupted unsorted chunks"
    handler = "[rack1-93-slot7:186363] *** Process received signal ***"
    cues = load_cues()
    assert cue_support([heap], cues) == {"native_crash": {"cue:native_crash": 1.0}}
    assert "native_crash" in cue_support([handler], cues)
    # a corrupt file is still the data's
    assert "corrupt_or_missing_data" in cue_support(["OSError: image file is truncated"], cues)
    ranked = fuse([rules("native_crash", 0.5)], [], [heap, handler])
    assert ranked[0].failure_class == "native_crash"


def test_a_loosely_similar_incident_alone_does_not_displace_the_rules_generic_answer() -> None:
    # Blind round 92: GLM-130B's conversion script's "ValueError: too many values to unpack"
    # (python_exception, right) was displaced by two past incidents at similarity 0.57.
    unpack = "ValueError: too many values to unpack (expected 2)"
    loose = fuse(
        [rules("python_exception", 0.45)], votes(("fd_or_process_limit", 0.9, 0.57)), [unpack]
    )
    assert loose[0].failure_class == "python_exception"
    assert loose[1].failure_class == "fd_or_process_limit"
    close = fuse(
        [rules("python_exception", 0.45)], votes(("dependency_error", 0.9, 0.85)), [unpack]
    )
    assert close[0].failure_class == "dependency_error"


def test_a_library_s_not_found_error_is_a_missing_data_cue() -> None:
    # Blind round 100: OpenVLA's fine-tuning asked tensorflow_datasets for a dataset name its
    # script defaulted to.
    line = "tensorflow_datasets.core.registered.DatasetNotFoundError: Dataset droid_wipe not found."
    assert "corrupt_or_missing_data" in cue_support([line], load_cues())


def test_a_likeness_of_traceback_frames_alone_does_not_displace_the_rules_answer() -> None:
    # Blind round 118 (pytorch/pytorch#115591): a distributed checkpoint's traceback cut before
    # its exception; a past incident sharing the frame 'File "<stdin>", line 1' at similarity
    # 1.00 put the CUDA driver first, above the rules' right generic exception.
    frame = '  File "<stdin>", line 1, in <module>'
    vote = votes(("cuda_driver_mismatch", 0.5, 1.0))
    assert fuse([rules("python_exception", 0.4)], vote, [frame])[0].failure_class == (
        "cuda_driver_mismatch"
    )
    framed = fuse([rules("python_exception", 0.4)], vote, [frame], frames_only=True)
    assert framed[0].failure_class == "python_exception"
    assert framed[1].failure_class == "cuda_driver_mismatch"
