"""Who printed a line: file names and launcher prefixes, never one id inferred from another."""

from __future__ import annotations

import pytest

from denpex.events import Attribution
from denpex.ingest.attribution import attribution_from_path, looks_srun_labelled, split_prefixes


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
