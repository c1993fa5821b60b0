"""Real lines Ray's C++ core printed in failed runs meet the signatures generated from its source
(catalogs/ray_core), its extractor reads Ray's logging statements as they are written, and its
reviewed mapping decides messages as a reviewer would.

Every real line below is copied from the public thread named beside it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from catalogs.core.cli import generate
from catalogs.ray_core.extract import cpp_messages
from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_catalog_reads, catalog_hits, decide

FAMILY = "ray_core_cat"
RULES = Path(__file__).resolve().parents[2] / "rules"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/ray-project/ray/issues/29412: the GCS's node-death error, re-printed by the
        # driver (Ray 2.x: "(OOM, preempted node, etc.)")
        (
            "2022-10-27 17:53:40,197 WARNING worker.py:1839 -- The node with node id:"
            " b1d7d50a82a27c9cdb73c6c5a27cf355243895e54636ae698b31d1bf and address: 172.29.58.101"
            " and node name: 172.29.58.101 has been marked dead because the detector has missed"
            " too many heartbeats from it. This can happen when a    (1) raylet crashes"
            " unexpectedly (OOM, preempted node, etc.) ",
            "node_failure",
        ),
        # github.com/ray-project/kuberay/issues/3827: the same error in the GCS's event log (JSON)
        (
            '{"custom_fields":{"ip":"156.176.0.154","node_id":"ada3a3771fac751bd7c6b674e3b5e2df0'
            '45b93550e6d31a410cad0be"},"event_id":"1820787c7179bb878444735ecb267c1bea04",'
            '"host_name":"paas-controller-1","label":"RAY_NODE_REMOVED","message":"The node with'
            " node id: ada3a3771fac751bd7c6b674e3b5e2df045b93550e6d31a410cad0be and address:"
            " 156.176.0.154 and node name: 156.176.0.154 has been marked dead because the detector"
            " has missed too many heartbeats from it. This can happen when a \\t(1) raylet crashes"
            " unexpectedly (OOM, etc.) \\\\n\\t(2) raylet has lagging heartbeats due to slow"
            ' network or busy workload.","pid":"65","severity":"ERROR","source_type":"GCS",'
            '"timestamp":1750669108}',
            "node_failure",
        ),
        # github.com/InternLM/lmdeploy/issues/3457: the raylet's file-system monitor
        (
            "(raylet) [2025-04-21 10:05:37,313 E 959680 959717] file_system_monitor.cc:116:"
            " /tmp/ray/session_2025-03-25_17-33-57_554404_959134 is over 95% full, available"
            " space: 42.6695 GB; capacity: 876.137 GB. Object creation will fail if spilling is"
            " required.",
            "disk_full",
        ),
        # github.com/vllm-project/vllm/pull/26278: the same, under vLLM's API server
        (
            "(APIServer pid=132135) (raylet) [2025-12-23 23:06:29,336 E 133251 133275] (raylet)"
            " file_system_monitor.cc:116: /tmp/ray/session_2025-12-23_22-55-15_211286_132135 is"
            " over 95% full, available space: 46.5185 GB; capacity: 7096.47 GB. Object creation"
            " will fail if spilling is required.",
            "disk_full",
        ),
        # github.com/vllm-project/vllm/issues/1465 (Ray 2.7.1, tensor_parallel_size=2): the GCS
        # client gave up on the GCS
        (
            "gcs_rpc_client.h:552: Failed to connect to GCS within 60 seconds. GCS may have been"
            " killed. It's either GCS is terminated by `ray stop` or is killed unexpectedly.",
            "peer_process_died",
        ),
    ],
)
def test_a_real_ray_core_line_gets_its_class(
    matcher: Matcher, text: str, failure_class: str
) -> None:
    assert_catalog_reads(matcher, text, FAMILY, failure_class)


def test_a_sigterm_line_is_a_low_prior_that_settles_nothing(matcher: Matcher) -> None:
    # every orderly `ray stop` prints it too: a hint, never the diagnosis alone
    for text in (
        "[2024-02-01 10:00:00,000 I 1834 1834] gcs_server_main.cc:122: GCS server received"
        " SIGTERM, shutting down...",
        "[2024-02-01 10:00:00,000 I 1834 1834] main.cc:330: Raylet received SIGTERM, shutting"
        " down...",
    ):
        hits = catalog_hits(matcher, text, FAMILY)
        assert hits
        assert all(m.signature.failure_class == "process_killed" for m in hits)
        assert all(m.signature.confidence <= 0.35 for m in hits)


@pytest.mark.parametrize(
    ("text", "level", "file", "failure_class"),
    [
        # 2.50.1 src/ray/gcs/gcs_node_manager.cc (GcsNodeManager::InferDeathInfo): the death
        # cause drivers quote in ActorDiedError
        (
            "health check failed due to missing too many heartbeats",
            "REASON",
            "src/ray/gcs/gcs_node_manager.cc",
            "node_failure",
        ),
        # 2.9.3 src/ray/gcs/gcs_server/gcs_health_check_manager.cc
        (
            "Node {} is dead because the health check failed.",
            "WARNING",
            "src/ray/gcs/gcs_server/gcs_health_check_manager.cc",
            "node_failure",
        ),
        # 2.50.1 src/ray/gcs/gcs_actor_manager.cc: an actor lost to a preempted node
        (
            "\tthe actor's node was preempted: ",
            "REPORT",
            "src/ray/gcs/gcs_actor_manager.cc",
            "preemption",
        ),
        # 2.9.3 / 2.50.1 src/ray/raylet/node_manager.cc: the memory monitor's kill
        (
            "Worker evicted and process killed to reclaim memory. worker pid: {}",
            "INFO",
            "src/ray/raylet/node_manager.cc",
            "host_oom",
        ),
        # 2.9.3 / 2.50.1 src/ray/object_manager/plasma/store_runner.cc
        (
            "System memory request exceeds memory available in {}. The request is for {} bytes,"
            " and the amount available is {} bytes. You may be able to free up space by deleting"
            " files in /dev/shm. If you are inside a Docker container, you may need to pass an"
            " argument with the flag '--shm-size' to 'docker run'.",
            "WARNING",
            "src/ray/object_manager/plasma/store_runner.cc",
            "shm_exhausted",
        ),
        # 2.9.3 / 2.50.1 src/ray/object_manager/plasma/object_lifecycle_manager.cc
        (
            "Plasma fallback allocator failed, likely out of disk space.",
            "ERROR",
            "src/ray/object_manager/plasma/object_lifecycle_manager.cc",
            "disk_full",
        ),
        # 2.50.1 src/ray/gcs_rpc_client/rpc_client.h: the address does not answer at start-up
        (
            "Failed to connect to GCS at address {}:{} within {} seconds.",
            "WARNING",
            "src/ray/gcs_rpc_client/rpc_client.h",
            "rendezvous_failure",
        ),
        # 2.50.1 src/ray/raylet/main.cc
        (
            "received SIGTERM. Existing local drain request = {}",
            "INFO",
            "src/ray/raylet/main.cc",
            "process_killed",
        ),
    ],
)
def test_the_reviewed_mapping_names_the_mechanism(
    text: str, level: str, file: str, failure_class: str
) -> None:
    decision = decide("ray_core", text, level, file)
    assert decision.disposition == "mapped"
    assert decision.failure_class == failure_class


@pytest.mark.parametrize(
    ("text", "level", "file"),
    [
        # 2.50.1 src/ray/gcs/gcs_actor_manager.cc: a node stopped on purpose
        (
            "\tthe actor's node was terminated expectedly: ",
            "REPORT",
            "src/ray/gcs/gcs_actor_manager.cc",
        ),
        # 2.9.3 / 2.50.1 src/ray/raylet/node_manager.cc: a drain the autoscaler asked for
        (
            "Node is marked as dead by GCS because the node is drained.",
            "INFO",
            "src/ray/raylet/node_manager.cc",
        ),
        # 2.50.1 src/ray/raylet/node_manager.cc: the job finished, its workers are cleaned up
        (
            "The leased worker  is killed because the job {} finished.",
            "INFO",
            "src/ray/raylet/node_manager.cc",
        ),
    ],
)
def test_planned_terminations_are_context(text: str, level: str, file: str) -> None:
    assert decide("ray_core", text, level, file).disposition == "context"


def test_a_worker_death_without_its_cause_is_a_low_prior_symptom() -> None:
    # 2.9.3 / 2.50.1 src/ray/raylet/node_manager.cc: the exit detail lists three possible causes
    decision = decide(
        "ray_core",
        "Worker unexpectedly exits with a connection error code {}. {}. There are some potential"
        " root causes. (1) The process is killed by SIGKILL by OOM killer due to high memory"
        " usage. (2) ray stop --force is called. (3) The worker is crashed unexpectedly due to"
        " SIGSEGV or other unexpected errors.",
        "REASON",
        "src/ray/raylet/node_manager.cc",
    )
    assert decision.failure_class == "peer_process_died"
    assert decision.confidence is not None and decision.confidence <= 0.35


# Ray 2.50.1 src/ray/raylet/node_manager.cc and src/ray/raylet/main.cc, statements as written
NODE_MANAGER = r"""
void NodeManager::NodeRemoved(const NodeID &node_id) {
      RAY_LOG(INFO).WithField(node_id)
          << "Node is marked as dead by GCS because the node is drained.";
}

void NodeManager::HandleClientConnectionError(
    const std::shared_ptr<ClientConnection> &client,
    const boost::system::error_code &error) {
  const std::string err_msg = absl::StrCat(
      "Worker unexpectedly exits with a connection error code ",
      error.value(),
      ". ",
      error.message(),
      ". There are some potential root causes.");
}

void NodeManager::HandleReturnWorkerLease(rpc::ReturnWorkerLeaseRequest request) {
    DisconnectClient(
        worker->Connection(),
        /*graceful=*/false,
        rpc::WorkerExitType::SYSTEM_ERROR,
        absl::StrCat("The leased worker has unrecoverable failure. Worker is requested "
                     "to be destroyed when it is returned. ",
                     request.disconnect_worker_error_detail()));
}

int main(int argc, char *argv[]) {
        RAY_CHECK_OK(cgroup_mgr.AddProcessToWorkersCgroup(pid))
            << absl::StrFormat("Failed to move process %s into the workers cgroup.", pid);
      node_death_info.set_reason_message("received SIGTERM");
}
"""


def test_the_extractor_reads_ray_s_logging_statements_as_written() -> None:
    found = {
        (text, level): (style, function)
        for text, style, _, level, function in cpp_messages(NODE_MANAGER)
    }
    # `.WithField(...)` between the head and the stream is read past
    assert found[("Node is marked as dead by GCS because the node is drained.", "INFO")] == (
        "literal",
        "NodeManager::NodeRemoved",
    )
    # a detail kept in a variable, and one handed to DisconnectClient, are exit details
    assert (
        "Worker unexpectedly exits with a connection error code {}. {}. There are some potential"
        " root causes.",
        "REASON",
    ) in found
    assert (
        "The leased worker has unrecoverable failure. Worker is requested to be destroyed when"
        " it is returned. {}",
        "REASON",
    ) in found
    # absl::StrFormat's conversions are placeholders; a check's message is level CHECK
    assert found[("Failed to move process {} into the workers cgroup.", "CHECK")][0] == "brace"
    assert ("received SIGTERM", "REASON") in found


def test_regenerating_from_what_the_catalog_records_changes_nothing(tmp_path: Path) -> None:
    family = tmp_path / "rules"
    shutil.copytree(RULES, family, ignore=shutil.ignore_patterns("*_cat"))
    for covered in ("ray_cat", FAMILY):
        shutil.copytree(RULES / covered, family / covered)
    before = {p.name: p.read_bytes() for p in (family / FAMILY).iterdir()}
    catalog, changed = generate("ray_core", None, rules_dir=family)
    assert changed == []
    assert {p.name: p.read_bytes() for p in (family / FAMILY).iterdir()} == before
    assert len(catalog.signatures) == sum(name.endswith(".yaml") for name in before)


def test_both_release_lines_were_read() -> None:
    accounting = json.loads((RULES / FAMILY / "CATALOG.json").read_text())
    assert [row["line"] for row in accounting["releases"]] == ["2.9", "2.50"]
    assert all(row["found"] > 0 and row["signatures"] > 0 for row in accounting["releases"])
