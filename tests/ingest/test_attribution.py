"""Who printed a line: file names and launcher prefixes, never one id inferred from another."""

from __future__ import annotations

import pytest

from denpex.events import Attribution
from denpex.ingest.attribution import (
    attribution_from_path,
    looks_srun_labelled,
    rank_stated_by_c10d,
    split_prefixes,
)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("rank3.log", Attribution(rank=3)),
        ("logs/rank_12.txt", Attribution(rank=12)),
        ("worker-3.log", Attribution(rank=3)),
        ("node01/rank3.out", Attribution(rank=3, host="node01")),
        ("gpu-042/logs/rank17.log", Attribution(rank=17, host="gpu-042")),
        # torchrun --log-dir names the local rank, not the global one.
        (
            "6e89f4d0-6c25-41eb-ab1e-87583d54904d_zugri3uk/attempt_0/3/stderr.log",
            Attribution(local_rank=3),
        ),
        ("ip-10-0-0-1/attempt_1/1/stdout.log", Attribution(local_rank=1, host="ip-10-0-0-1")),
        ("job_1234/node07/local_rank_2.log", Attribution(local_rank=2, host="node07")),
        ("launcher.log", Attribution()),
        ("run1/stdout.log", Attribution()),
    ],
)
def test_file_names_state_rank_local_rank_and_host(path: str, expected: Attribution) -> None:
    assert attribution_from_path(path) == expected


def test_torchrun_tee_prefix_names_local_rank_and_excepthook_prefix_names_global_rank() -> None:
    line = "[default2]:[rank2]: RuntimeError: boom on rank 2"
    prefixed = split_prefixes(line)
    assert prefixed.who == Attribution(rank=2, local_rank=2)
    assert prefixed.message == "RuntimeError: boom on rank 2"


def test_torchrun_tee_prefix_alone_gives_only_a_local_rank() -> None:
    prefixed = split_prefixes("[default1]:2026-11-30 06:21:04,683 INFO step 0 loss 0.3679")
    assert prefixed.who == Attribution(local_rank=1)
    assert prefixed.message.startswith("2026-11-30 06:21:04,683 INFO")


def test_ray_worker_prefix_gives_pid_and_address() -> None:
    prefixed = split_prefixes(
        "(RayTrainWorker pid=48213, ip=10.0.3.17) [rank3]: RuntimeError: CUDA error: an illegal "
        "memory access was encountered"
    )
    assert prefixed.who == Attribution(rank=3, pid=48213, host="10.0.3.17")
    assert prefixed.message.startswith("RuntimeError: CUDA error")


def test_a_ray_actor_s_own_repr_before_the_pid_names_its_rank() -> None:
    # Megatron-LM's workers under Ray (public issue NVIDIA/Megatron-LM#907)
    prefixed = split_prefixes(
        '(worker6, rank=6, pid=8930, ip=10.42.3.242)   File "/opt/megatron-lm/megatron/core/'
        'datasets/gpt_dataset.py", line 111, in __init__'
    )
    assert prefixed.who == Attribution(rank=6, pid=8930, host="10.42.3.242")
    assert prefixed.message.lstrip().startswith('File "/opt/megatron-lm')


def test_mpirun_tag_output_prefix_gives_rank() -> None:
    prefixed = split_prefixes("[1,5]<stderr>:Traceback (most recent call last):")
    assert prefixed.who.rank == 5
    assert prefixed.message == "Traceback (most recent call last):"


def test_srun_label_is_read_only_when_the_whole_source_is_labelled() -> None:
    lines = [
        "0: 2026-11-30 06:21:04,683 INFO step 0",
        "1: 2026-11-30 06:21:04,684 INFO step 0",
        "3: Traceback (most recent call last):",
        "3: ValueError: bad shard",
    ]
    assert looks_srun_labelled(lines)
    assert split_prefixes(lines[3], srun_labelled=True).who.rank == 3
    assert split_prefixes(lines[3], srun_labelled=False).who.rank is None


def test_glog_bracket_is_not_mistaken_for_a_launcher_prefix() -> None:
    line = (
        "[rank0]:[E1218 20:27:21.426415 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught "
        "collective operation timeout"
    )
    prefixed = split_prefixes(line)
    assert prefixed.who == Attribution(rank=0)
    assert prefixed.message.startswith("[E1218 20:27:21.426415")


# Real vLLM worker lines (vllm-project/vllm issues, tensor-parallel runs).
@pytest.mark.parametrize(
    ("line", "rank", "pid"),
    [
        (
            "(VllmWorker rank=2 pid=2307184) ERROR 02-17 14:48:01 multiproc_executor.py:374] "
            "ValueError: Pointer argument (at 0) cannot be accessed from Triton (cpu tensor?)",
            2,
            2307184,
        ),
        (
            "(Worker_TP1 pid=3534) ERROR 10-11 22:28:17 [multiproc_executor.py:694] "
            "RuntimeError: Could not find nvcc",
            1,
            3534,
        ),
        (
            "(VllmWorkerProcess pid=1947427) ERROR 03-03 15:10:13 multiproc_worker_utils.py:242] "
            "Exception in worker VllmWorkerProcess while processing method load_model.",
            None,
            1947427,
        ),
    ],
)
def test_vllm_worker_prefixes_name_the_worker_rank_and_pid(
    line: str, rank: int | None, pid: int
) -> None:
    prefixed = split_prefixes(line)
    assert prefixed.who == Attribution(rank=rank, pid=pid)
    assert prefixed.message.startswith("ERROR ")


@pytest.mark.parametrize(
    "line",
    [
        # As a terminal captured it, and as pasted into an issue (the ESC bytes lost).
        "\x1b[1;36m(VllmWorker rank=0 pid=4716)\x1b[0;0m INFO 02-24 00:55:46 "
        "[custom_all_reduce.py:195]",
        "[1;36m(VllmWorker rank=0 pid=4716)[0;0m INFO 02-24 00:55:46 [custom_all_reduce.py:195]",
    ],
)
def test_colour_codes_around_a_prefix_do_not_hide_it(line: str) -> None:
    prefixed = split_prefixes(line)
    assert prefixed.who == Attribution(rank=0, pid=4716)
    assert prefixed.message == "INFO 02-24 00:55:46 [custom_all_reduce.py:195]"


# A line PyTorch printed (github.com/modelscope/ms-swift/issues/6301, in evals/heldout), as
# containerd stores it under /var/log/pods (CRI format) and as `kubectl logs --timestamps` shows it.
_OOM = (
    "[rank11]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.35 GiB. GPU 3 has a "
    "total capacity of 63.42 GiB of which 1.70 GiB is free."
)


@pytest.mark.parametrize(
    "line",
    [f"2024-05-01T10:00:01.123456789Z stderr F {_OOM}", f"2024-05-01T10:00:01.123456789Z {_OOM}"],
)
def test_a_container_runtime_s_envelope_is_set_aside_and_its_time_kept(line: str) -> None:
    prefixed = split_prefixes(line)
    assert prefixed.who == Attribution(rank=11)
    assert prefixed.message.startswith("torch.OutOfMemoryError: CUDA out of memory.")
    assert prefixed.envelope_time == "2024-05-01T10:00:01.123456789Z"


def test_a_collector_s_time_before_an_mpirun_tag_is_an_envelope() -> None:
    # Real (github.com/facebookresearch/deit/issues/76), an MPI job's collected output.
    line = (
        "2021-03-10T13:22:37.483Z: [1,0]<stderr>:OSError: cannot identify image file "
        "<_io.BufferedReader name='imagenet/raw-data/train/n01667778/n01667778_6494.JPEG'>"
    )
    prefixed = split_prefixes(line)
    assert prefixed.who == Attribution(rank=0)
    assert prefixed.envelope_time == "2021-03-10T13:22:37.483Z"


def test_a_program_s_own_leading_time_is_not_taken_for_an_envelope() -> None:
    line = "2026-11-30T06:21:04.683Z INFO trainer: step 0 loss 0.3679"
    prefixed = split_prefixes(line)
    assert prefixed.message == line
    assert prefixed.envelope_time is None


def test_nccl_s_own_prefix_names_host_and_pid_but_not_a_rank() -> None:
    # Real (github.com/NVIDIA/nccl/issues/962): host:pid:tid [cuda device].
    line = "node:2134736:2285781 [0] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'"
    prefixed = split_prefixes(line)
    assert prefixed.who == Attribution(host="node", pid=2134736)
    assert prefixed.message == "include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'"


@pytest.mark.parametrize(
    ("message", "rank"),
    [
        # Real c10d messages, torch 1.13 to 2.4 (issues quoted in evals/heldout).
        (
            "[E ProcessGroupNCCL.cpp:916] [Rank 1] NCCL watchdog thread terminated with "
            "exception: CUDA error: uncorrectable ECC error encountered",
            1,
        ),
        (
            "[E1003 18:37:01.838048403 ProcessGroupNCCL.cpp:1515] [PG 0 (default_pg) Rank 1] "
            "Process group watchdog thread terminated with exception: [Rank 1] Watchdog caught "
            "collective operation timeout",
            1,
        ),
        (
            "[PG ID 0 PG GUID 0 Rank 0] Process group watchdog thread terminated with exception: "
            "CUDA error: an illegal memory access was encountered",
            0,
        ),
        # Real (github.com/PKU-Alignment/align-anything/issues/113), std::terminate's report.
        (
            "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 6] Process group watchdog thread "
            "terminated with exception: CUDA error: device-side assert triggered",
            6,
        ),
        # A sub-group's rank is not a global rank.
        (
            "[E1003 18:37:01.838048403 ProcessGroupNCCL.cpp:1515] [PG 3 Rank 1] Process group "
            "watchdog thread terminated with exception: NCCL error",
            None,
        ),
        ("2026-11-30 06:21:04,683 INFO step 0 loss 0.3679", None),
    ],
)
def test_c10d_states_the_global_rank_of_the_process_that_printed(
    message: str, rank: int | None
) -> None:
    assert rank_stated_by_c10d(message) == rank
