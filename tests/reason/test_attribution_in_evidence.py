"""Ranks the evidence states inside messages: c10d's `[Rank N]`, NCCL's proxy service, vLLM's
worker prefixes. Lines are quoted from the public issues in evals/heldout."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import diagnose_paths, write_job

# github.com/kohya-ss/sd-scripts/issues/1434: the exception names no rank, c10d's report does.
ECC = (
    "RuntimeError: CUDA error: uncorrectable ECC error encountered\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, so the "
    "stacktrace below might be incorrect.\n"
    "[E ProcessGroupNCCL.cpp:916] [Rank 1] NCCL watchdog thread terminated with exception: CUDA "
    "error: uncorrectable ECC error encountered\n"
)

# github.com/NVIDIA/nccl/issues/962: the proxy service of rank 93 could not allocate.
NCCL_PROXY_OOM = (
    "node:2134736:2285781 [0] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'\n"
    "node:2134736:2285781 [0] include/alloc.h:185 NCCL WARN Failed to CUDA calloc 6291456 bytes\n"
    "node:2134736:2285781 [0] proxy.cc:1518 NCCL WARN [Proxy Service 93] Failed to execute "
    "operation Setup from rank 93, retcode 1\n"
    "node:2134736:2285759 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by "
    "remote peer node.cm.cluster<40031>\n"
)

# github.com/vllm-project/vllm/issues/17939 (rank 1's worker, its traceback trimmed).
_WORKER = "(VllmWorker rank=1 pid=2445156) ERROR 05-10 16:00:15 [multiproc_executor.py:470]"
VLLM_WORKER_OOM = "".join(
    f"{_WORKER} {line}\n"
    for line in (
        "WorkerProc hit an exception.",
        "Traceback (most recent call last):",
        '  File "/opt/home/s4075740/miniconda3/envs/torch/lib/python3.10/site-packages/vllm/v1/'
        'worker/gpu_model_runner.py", line 1548, in _dummy_sampler_run',
        "    raise RuntimeError(",
        "RuntimeError: CUDA out of memory occurred when warming up sampler with 256 dummy "
        "requests. Please try lowering `max_num_seqs` or `gpu_memory_utilization` when "
        "initializing the engine.",
    )
)


def test_a_rank_named_by_c10d_for_the_same_error_locates_the_exception(tmp_path: Path) -> None:
    top = diagnose_paths([str(write_job(tmp_path, {"post.log": ECC}))]).root_causes[0]
    assert top.failure_class == "gpu_memory_ecc"
    assert top.originating_rank == 1


def test_nccl_s_proxy_service_names_the_rank_of_its_process(tmp_path: Path) -> None:
    top = diagnose_paths([str(write_job(tmp_path, {"post.log": NCCL_PROXY_OOM}))]).root_causes[0]
    assert top.failure_class == "device_oom"
    assert top.originating_rank == 93


def test_a_vllm_worker_s_traceback_under_its_logger_header_is_one_event(tmp_path: Path) -> None:
    top = diagnose_paths([str(write_job(tmp_path, {"worker.log": VLLM_WORKER_OOM}))]).root_causes[0]
    assert top.failure_class == "device_oom"
    assert top.evidence[0].rank == 1
    # Every worker warms up alike and only worker 1's output is at hand: a candidate, not named.
    assert top.candidate_ranks == [1]
    assert top.evidence[0].context[0] == "Traceback (most recent call last):"
    assert top.evidence[0].context[-1] == "    raise RuntimeError("
