"""Real lines XLA printed in failed runs meet the signatures generated from its source
(catalogs/xla), its reviewed mapping decides messages as a reviewer would, and regenerating the
catalog from its recorded messages changes nothing.

Every real line below is copied from the public thread named beside it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from catalogs.core.cli import generate
from catalogs.xla.extract import file_messages
from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_catalog_reads, assert_mapped, catalog_hits, decide

FAMILY = "xla_cat"
REPO = Path(__file__).resolve().parents[2]
CATALOG = REPO / "rules" / FAMILY / "CATALOG.json"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/jax-ml/jax/issues/22740: jax.distributed on two hosts, the NCCL clique of 16
        # devices never formed (TSL's older log prefix, jaxlib 0.4.31)
        (
            "2024-07-29 17:14:59.920189: E external/xla/xla/service/rendezvous.cc:38] This thread"
            " has been waiting for `initialize clique for rank 6; clique=devices=[0,1,2,3,4,5,6,7,"
            "8,9,10,11,12,13,14,15]; stream=0; run_id=724296073` for 10 seconds and may be stuck."
            " Expected 8 threads to join the rendezvous, but not all of them arrived on time.",
            "collective_timeout",
        ),
        # github.com/EnzymeAD/Enzyme-JAX/issues/623: a clique id awaited through the coordination
        # service on 8 nodes
        (
            "E0000 00:00:1743713172.513857  698835 pjrt_stream_executor_client.cc:3072] Execution"
            " of replica 0 failed: DEADLINE_EXCEEDED: GetKeyValue() timed out with key: devices=[0,"
            "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29];"
            " stream=0; groups=[[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,"
            "25,26,27,28,29]]; root_device=0; num_local_participants=2 and duration: 10m"
            " [type.googleapis.com/tensorflow.CoordinationServiceError='']",
            "rendezvous_failure",
        ),
        # github.com/jax-ml/jax/issues/22070: another process held the TPU
        (
            "INFO:2024-06-25 00:34:55,142:jax._src.xla_bridge:889: Unable to initialize backend"
            " 'tpu': ABORTED: The TPU is already in use by process with pid 176028. Not attempting"
            " to load libtpu.so in this process.",
            "launch_config_error",
        ),
        # github.com/conda-forge/jaxlib-feedstock/issues/329: jaxlib built against a newer cuDNN
        (
            "E1027 15:10:59.012564 3266428 cuda_dnn.cc:456] Loaded runtime CuDNN library: 9.10.1"
            " but source was compiled with: 9.13.1.  CuDNN library needs to have matching major"
            " version and equal or higher minor version. If using a binary install, upgrade your"
            " CuDNN library.  If building from sources, make sure the library loaded at runtime is"
            " compatible with the version specified during compile configuration.",
            "cuda_driver_mismatch",
        ),
        # github.com/openxla/xla/issues/10660: EXLA (Elixir's XLA binding) on a 6 GB GPU
        (
            "** (RuntimeError) Out of memory while trying to allocate 117964800 bytes.",
            "device_oom",
        ),
    ],
)
def test_a_real_xla_line_gets_its_class(matcher: Matcher, text: str, failure_class: str) -> None:
    assert_catalog_reads(matcher, text, FAMILY, failure_class)


def test_a_workspace_the_bfc_allocator_retries_is_weak_memory_evidence(matcher: Matcher) -> None:
    # github.com/tensorflow/tensorflow/issues/43546 (TensorFlow 2.2, the same BFC allocator):
    # the caller retried with less memory, so the line stays an unsure symptom
    text = (
        "2020-09-24 21:35:23.363348: W tensorflow/core/common_runtime/bfc_allocator.cc:246]"
        " Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.02GiB with"
        " freed_by_count=0. The caller indicates that this is not a failure, but may mean that"
        " there could be performance gains if more memory were available."
    )
    hits = catalog_hits(matcher, text, FAMILY)
    assert {m.signature.failure_class for m in hits} == {"device_oom"}
    assert all(m.signature.confidence <= 0.35 for m in hits)


def test_an_nccl_error_quoted_by_xla_is_read_by_the_nccl_signatures(matcher: Matcher) -> None:
    # github.com/jax-ml/jax/issues/22747 (jaxlib 0.4.30): XLA's NCCL status matches as a
    # symptom; the hand-written NCCL signature that reads NCCL's own error string reports it
    text = (
        "INTERNAL: external/xla/xla/service/gpu/nccl_utils.cc:305: NCCL operation"
        " ncclCommInitRank(&comm, nranks, id, rank) failed: unhandled system error (run with"
        " NCCL_DEBUG=INFO for details). Last NCCL warning(error) log entry (may be unrelated)"
        " 'socketTryAccept: Accept failed: Bad file descriptor'."
    )
    hits = catalog_hits(matcher, text, FAMILY)
    assert {(m.signature.failure_class, m.signature.role.value) for m in hits} == {
        ("nccl_internal_error", "symptom")
    }
    assert "nccl_internal_error" in {m.signature.failure_class for m in matcher.scan_text(text)}


@pytest.mark.parametrize(
    ("text", "level", "file", "failure_class"),
    [
        # 0.11 xla/tsl/framework/bfc_allocator.cc: the allocation that failed
        (
            "Allocator (%s) ran out of memory trying to allocate %s (rounded to %s) from the %s"
            " end requested by op %s\nIf this is caused by memory fragmentation, the environment"
            " variable 'TF_GPU_ALLOCATOR=cuda_malloc_async' may improve the situation.\nCurrent"
            " allocation summary follows.",
            "WARNING",
            "xla/tsl/framework/bfc_allocator.cc",
            "device_oom",
        ),
        # 0.4.38 xla/stream_executor/gpu/gpu_cudamallocasync_allocator.cc
        (
            "%s cuMemAllocAsync failed to allocate %s bytes: %s\n Reported by CUDA: Free"
            " memory/Total memory: %s/%s",
            "ERROR",
            "xla/stream_executor/gpu/gpu_cudamallocasync_allocator.cc",
            "device_oom",
        ),
        # 0.11 xla/stream_executor/gpu/gpu_command_buffer.cc
        (
            "Underlying backend ran out of memory trying to instantiate command buffer with %d"
            " (total of %d alive graphs in the process). You can try to (a) Give more memory to"
            " the driver by reducing XLA_CLIENT_MEM_FRACTION (b) Disable command buffers with"
            " 'XLA_FLAGS=--xla_gpu_enable_command_buffer=' (empty set). Original error: %s",
            "RESOURCE_EXHAUSTED",
            "xla/stream_executor/gpu/gpu_command_buffer.cc",
            "device_oom",
        ),
        # 0.4.38 xla/pjrt/distributed/client.cc: jax.distributed.initialize's connect timeout
        (
            "Failed to connect to distributed JAX controller: waited too long for some tasks to"
            " show up. This may be due to 1) some tasks crashed earlier before connecting, 2) some"
            " tasks were never scheduled, or 3) scheduling delays. Consider setting a longer"
            " initialization timeout if such delays are expected, the timeout is currently set to:"
            " %s.\n\nOriginal runtime error: %s",
            "ERROR",
            "xla/pjrt/distributed/client.cc",
            "rendezvous_failure",
        ),
        # 0.7 xla/pjrt/distributed/service.cc: the coordinator could not listen on its port
        (
            "Failed to start RPC server",
            "UNKNOWN",
            "xla/pjrt/distributed/service.cc",
            "rendezvous_failure",
        ),
        # 0.4.38 xla/tsl/distributed_runtime/coordination/coordination_service.cc: the class
        # catalogs/tensorflow gives the same text
        (
            "Task %s heartbeat timeout. This indicates that the remote task has failed, got"
            " preempted, or crashed unexpectedly. Check the task logs for an earlier error or"
            " scheduler events (e.g. preemption, eviction) to debug further.",
            "UNAVAILABLE",
            "xla/tsl/distributed_runtime/coordination/coordination_service.cc",
            "peer_process_died",
        ),
        # 0.11 xla/service/rendezvous.cc: the process exits after the termination timeout
        (
            "[id=%d] Termination timeout for `%s` of %d seconds exceeded. Exiting to ensure a"
            " consistent program state. Expected %d threads to join the rendezvous, but only %d"
            " of them arrived on time.",
            "FATAL",
            "xla/service/rendezvous.cc",
            "collective_timeout",
        ),
        # 0.7 xla/tsl/distributed_runtime/preemption/preemption_sync_manager.cc
        (
            "Received preemption notice with death_time %s",
            "INFO",
            "xla/tsl/distributed_runtime/preemption/preemption_sync_manager.cc",
            "preemption",
        ),
        # 0.11 xla/stream_executor/cuda/cuda_diagnostics.cc
        (
            "kernel version %s does not match DSO version %s -- cannot find working devices in"
            " this configuration",
            "ERROR",
            "xla/stream_executor/cuda/cuda_diagnostics.cc",
            "cuda_driver_mismatch",
        ),
        # 0.4.38 xla/pjrt/pjrt_stream_executor_client.cc: the program reused a donated array
        (
            "Attempt to use a buffer that was previously donated in the same call to Execute()"
            " (second use: flattened argument %d, replica %d). Toy example for this bug:"
            " `f(donate(a), a)`.",
            "INVALID_ARGUMENT",
            "xla/pjrt/pjrt_stream_executor_client.cc",
            "python_exception",
        ),
    ],
)
def test_the_reviewed_mapping_names_the_cause(
    text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped("xla", text, level, file, failure_class)


@pytest.mark.parametrize(
    ("text", "level", "file", "disposition"),
    [
        # the BFC allocator's dump after an out-of-memory line: part of that report
        (
            "Sum Total of in-use chunks: %s",
            "INFO",
            "xla/tsl/framework/bfc_allocator.cc",
            "context",
        ),
        # the rendezvous' all-clear for its own stuck warning
        (
            "Thread is unstuck! Warning above was a false-positive. Perhaps the timeout is too"
            " short.",
            "ERROR",
            "xla/service/rendezvous.cc",
            "context",
        ),
        # printed whenever TensorFlow and JAX register the same CUDA library in one process
        (
            "Unable to register cuDNN factory: %s",
            "ERROR",
            "xla/stream_executor/cuda/cuda_dnn.cc",
            "excluded",
        ),
        # a warning no rule reads: the run goes on
        (
            "PreparedTransfer destroyed with unfulfilled transfer_event.",
            "WARNING",
            "xla/pjrt/gpu/se_gpu_pjrt_client.cc",
            "context",
        ),
        # three words other programs print alike (DeepSpeed's healthy 'not yet implemented')
        ("Not yet implemented", "FATAL", "xla/stream_executor/tpu/tpu_platform.h", "excluded"),
    ],
)
def test_notices_dumps_and_generic_texts_settle_nothing(
    text: str, level: str, file: str, disposition: str
) -> None:
    assert decide("xla", text, level, file).disposition == disposition


def test_an_unexplained_internal_error_is_an_unclear_symptom() -> None:
    # 0.11 xla/backends/gpu/runtime/command_executor.cc: an invariant of XLA's own code
    decision = decide(
        "xla",
        "The number of recorded commands must match the size of command sequence: %d vs %d",
        "INTERNAL",
        "xla/backends/gpu/runtime/command_executor.cc",
    )
    assert decision.disposition == "mapped"
    assert decision.failure_class == "unknown"
    assert decision.confidence is not None and decision.confidence <= 0.35


def test_the_coordination_service_s_texts_are_left_to_the_tensorflow_catalog() -> None:
    # TensorFlow links the same tsl coordination service: its catalog's signature covers the
    # line, so the two catalogs do not both fire on it
    messages = json.loads(CATALOG.read_text(encoding="utf-8"))["messages"]
    heartbeat = next(m for m in messages if m["text"].startswith("Task %s heartbeat timeout."))
    assert heartbeat["signature"].startswith("tensorflow_cat.")
    assert not any(
        path.name.startswith("task_heartbeat_timeout")
        for path in (REPO / "rules" / FAMILY).iterdir()
    )


def test_the_extractor_reads_streams_statuses_and_named_strings() -> None:
    source = """
void F() {
  LOG(ERROR) << "This thread has been waiting for `" << name << "` for "
             << absl::ToInt64Seconds(t) << " seconds and may be stuck.";
  return Internal("NCCL operation %s failed: %s.", str, err);
  return absl::UnavailableError(absl::StrCat("Task ", task, " heartbeat timeout."));
  std::string error = absl::StrCat("Loaded runtime CuDNN library: ", v, " is too old.");
  LOG(ERROR) << error;
  // LOG(ERROR) << "commented out";
  VLOG(1) << "debug output";
}
"""
    found = {(m.level, m.text) for m in file_messages(source, "x/y.cc", "0.11")}
    assert found == {
        ("ERROR", "This thread has been waiting for `%s` for %s seconds and may be stuck."),
        ("INTERNAL", "NCCL operation %s failed: %s."),
        ("UNAVAILABLE", "Task %s heartbeat timeout."),
        ("ERROR", "Loaded runtime CuDNN library: %s is too old."),
    }


def test_regenerating_from_the_recorded_messages_changes_nothing(tmp_path: Path) -> None:
    # `generate --recorded` applies mapping.yaml and the generator to CATALOG.json's messages;
    # the hand-written families and tensorflow_cat (which covers the coordination service) are
    # what it reads besides
    rules = tmp_path / "rules"
    shutil.copytree(REPO / "rules", rules, ignore=shutil.ignore_patterns("*_cat"))
    for family in ("tensorflow_cat", FAMILY):
        shutil.copytree(REPO / "rules" / family, rules / family)
    before = {p.name: p.read_bytes() for p in (rules / FAMILY).iterdir()}
    catalog, changed = generate("xla", None, rules_dir=rules)
    assert changed == []
    assert {p.name: p.read_bytes() for p in (rules / FAMILY).iterdir()} == before
    assert len(catalog.signatures) == sum(name.endswith(".yaml") for name in before)
