"""The XGBoost and Dask distributed catalogs: their reviewed mappings decide the emitters' own
messages as a reviewer would, and real lines from public threads meet their signatures.

Format strings are copied from the named release's source (catalogs/xgboost: dmlc/xgboost;
catalogs/dask_distributed: the `distributed` wheel), with the level the extractor records. Every
real line is copied verbatim from the public thread named beside it.
"""

from __future__ import annotations

import pytest

from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_emitter_class, decide


@pytest.mark.parametrize(
    ("text", "level", "file", "disposition", "failure_class"),
    [
        # 2.1-3.0 src/collective/comm.cc (ConnectTrackerImpl)
        (
            "Failed to connect to the tracker.",
            "Fail",
            "src/collective/comm.cc",
            "mapped",
            "rendezvous_failure",
        ),
        # 3.0 src/collective/loop.cc
        (
            "Encountered EOF. The other end is likely closed.",
            "Fail",
            "src/collective/loop.cc",
            "mapped",
            "peer_process_died",
        ),
        # 3.0 include/xgboost/collective/poll_utils.h
        (
            "Poll timeout:{} seconds.",
            "Fail",
            "include/xgboost/collective/poll_utils.h",
            "mapped",
            "collective_timeout",
        ),
        # 3.0 src/collective/nccl_stub.cc (GetNcclResult): short, but evidence after the prefix
        (
            "NCCL failure: {}.",
            "Fail",
            "src/collective/nccl_stub.cc",
            "mapped",
            "nccl_internal_error",
        ),
        # 2.1-3.0 src/collective/nccl_stub.cc: NCCL is loaded at run time
        (
            "Failed to load NCCL from path: `{}`. Error:\n  ",
            "FATAL",
            "src/collective/nccl_stub.cc",
            "mapped",
            "dependency_error",
        ),
        # 3.0 src/common/device_vector.cu (ThrowOOMError)
        (
            "Memory allocation error on worker {}: {}\n- Free memory: {}\n- Requested memory: {}\n",
            "FATAL",
            "src/common/device_vector.cu",
            "mapped",
            "device_oom",
        ),
        # 3.0 src/collective/comm.cu
        (
            "Multiple processes within communication group running on same CUDA device is not "
            "supported. {}\n",
            "CHECK",
            "src/collective/comm.cu",
            "mapped",
            "launch_config_error",
        ),
        # 3.0 src/data/data.cc
        (
            "Label contains NaN, infinity or a value too large.",
            "CHECK",
            "src/data/data.cc",
            "mapped",
            "corrupt_or_missing_data",
        ),
        # 3.0 src/context.cc: a warning about a fall-back, not a failure
        (
            "No visible GPU is found, setting device to CPU.",
            "LOG_WARNING",
            "src/context.cc",
            "context",
            None,
        ),
        # 3.0 src/collective/socket.cc: one failed attempt before the retry
        (
            "Failed to connect to:{}:{} Error:{}",
            "LOG_WARNING",
            "src/collective/socket.cc",
            "context",
            None,
        ),
        # 3.0 python-package/xgboost/dask/__init__.py
        (
            "Invalid worker address: {worker.address}, expecting {_address}. This is likely caused "
            "by one of the workers died and Dask re-scheduled a different one. Resilience is not "
            "yet supported.",
            "ValueError",
            "python-package/xgboost/dask/__init__.py",
            "mapped",
            "peer_process_died",
        ),
        # 3.0 python-package/xgboost/spark/core.py: a configuration XGBoost refuses
        (
            "The `exact` tree method is not supported for distributed systems.",
            "ValueError",
            "python-package/xgboost/spark/core.py",
            "mapped",
            "framework_config_error",
        ),
    ],
)
def test_xgboost_messages(
    text: str, level: str, file: str, disposition: str, failure_class: str | None
) -> None:
    decision = decide("xgboost", text, level, file)
    assert decision.disposition == disposition
    assert decision.failure_class == failure_class


@pytest.mark.parametrize(
    ("text", "level", "disposition", "failure_class"),
    [
        # 2025.12 distributed/worker_memory.py: the nanny's memory-budget kill
        (
            "Worker {nanny.worker_address} (pid={process.pid}) exceeded "
            "{self.memory_terminate_fraction * 100:.0f}% memory budget. Restarting...",
            "WARNING",
            "mapped",
            "host_oom",
        ),
        # 2025.12 distributed/worker_memory.py: pressure, not a failure
        (
            "Worker is at %d%% memory usage. Pausing worker.  Process memory: %s -- Worker memory "
            "limit: %s",
            "WARNING",
            "context",
            None,
        ),
        # 2025.12 distributed/scheduler.py (KilledWorker)
        (
            "Task %s marked as failed because %d workers died while trying to run it",
            "ERROR",
            "mapped",
            "peer_process_died",
        ),
        # 2025.12 distributed/nanny.py
        (
            "Timed out connecting Nanny '%s' to scheduler '%s'",
            "ERROR",
            "mapped",
            "rendezvous_failure",
        ),
        # 2025.12 distributed/comm/core.py
        (
            "Timed out trying to connect to {addr} after {timeout} s",
            "OSError",
            "mapped",
            "peer_process_died",
        ),
        # 2025.12 distributed/comm/core.py
        (
            "Your Dask versions may not be in sync. Please ensure that you have the same version"
            " of dask and distributed on your client, scheduler, and worker machines",
            "ValueError",
            "mapped",
            "dependency_error",
        ),
        # 2025.12 distributed/worker.py: a deprecation notice
        (
            "The `loop` argument to `Worker` is ignored, and will be removed in a future release. "
            "The Worker always binds to the current loop",
            "WARNING",
            "excluded",
            None,
        ),
        # 2025.12 distributed/shuffle/_core.py: the cause is chained, the line does not say it
        (
            "P2P shuffling {id} failed during transfer phase",
            "RuntimeError",
            "mapped",
            "python_exception",
        ),
    ],
)
def test_dask_distributed_messages(
    text: str, level: str, disposition: str, failure_class: str | None
) -> None:
    decision = decide("dask_distributed", text, level, "distributed/x.py")
    assert decision.disposition == disposition
    assert decision.failure_class == failure_class
    if failure_class == "python_exception":
        assert decision.confidence is not None and decision.confidence <= 0.35


@pytest.mark.parametrize(
    ("text", "family", "failure_class"),
    [
        # github.com/dmlc/xgboost/issues/9603 (2.0, a worker that cannot reach the tracker)
        ("- Failed to connect to the tracker.", "xgboost_cat", "rendezvous_failure"),
        # github.com/dmlc/xgboost/issues/7140
        (
            "xgboost.core.XGBoostError: [13:55:26] /workspace/xgboost/src/c_api/../data/../common/"
            "device_helpers.cuh:414: Memory allocation error on worker 0: std::bad_alloc: "
            "cudaErrorMemoryAllocation: out of memory",
            "xgboost_cat",
            "device_oom",
        ),
        # github.com/dask/dask/issues/10091
        (
            "> Check failed: n_uniques == world (1 vs. 2) : Multiple processes within communication"
            " group running on same CUDA device is not supported.",
            "xgboost_cat",
            "launch_config_error",
        ),
        # github.com/NVIDIA/cuml/issues/7341
        (
            "2025-10-14 21:30:26,167 - distributed.scheduler - WARNING - Worker failed to heartbeat"
            " for 588s; attempting restart: <WorkerState 'tcp://127.0.0.1:46605', name: 1, status:"
            " running, memory: 1, processing: 1>",
            "dask_distributed_cat",
            "peer_process_died",
        ),
        (
            "2025-10-14 21:30:30,269 - distributed.worker - ERROR - Worker stream died during"
            " communication: tcp://127.0.0.1:46605",
            "dask_distributed_cat",
            "peer_process_died",
        ),
        # github.com/LiberTEM/LiberTEM/pull/941
        (
            "OSError: Timed out trying to connect to tcp://192.168.178.24:55678 after 10 s",
            "dask_distributed_cat",
            "peer_process_died",
        ),
        # github.com/coiled/feedback/issues/106 (an older release logged it at INFO)
        (
            "distributed.scheduler - INFO - Task ('read-csv-4944a4e90a27ee8f4883e6cac95c831a', 463)"
            " marked as failed because 3 workers died while trying to run it",
            "dask_distributed_cat",
            "peer_process_died",
        ),
        # github.com/coiled/benchmarks/pull/1268
        (
            "RuntimeError: shuffle_barrier failed during shuffle 8d74b206e9ef6556ea0bc79537a7c55d",
            "dask_distributed_cat",
            "python_exception",
        ),
    ],
)
def test_a_real_line_gets_its_emitter_s_class(
    matcher: Matcher, text: str, family: str, failure_class: str
) -> None:
    assert_emitter_class(matcher, text, family, failure_class)


def test_healthy_xgboost_and_dask_progress_lines_meet_no_catalog_signature(
    matcher: Matcher,
) -> None:
    # github.com/dask/distributed/issues/6880 and github.com/dmlc/xgboost/issues/6469: Dask's
    # progress lines in those failed runs
    healthy = (
        "2022-08-11 18:56:27,420 - distributed.scheduler - INFO - Retire worker names (249, 250,"
        " 251, 252)\n"
        "distributed.nanny - INFO -         Start Nanny at: 'tcp://172.16.4.18:37571'\n"
    )
    families = {"xgboost_cat", "dask_distributed_cat"}
    assert not [m for m in matcher.scan_text(healthy) if m.signature.family in families]
