"""The loudest error and `misleading` are read from real captured text."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.inject.labels import (
    Loudest,
    error_lines,
    is_misleading,
    loudest_error,
    naive_class,
    rank_of_file,
)
from tests.conftest import BAD_SAMPLE


def _texts(case: Path) -> dict[str, str]:
    return {
        path.relative_to(case).as_posix(): path.read_text(encoding="utf-8")
        for path in case.rglob("*.log")
    }


def test_torchrun_root_cause_is_followed_to_that_rank_s_last_error() -> None:
    loudest = loudest_error(_texts(BAD_SAMPLE))
    assert loudest is not None
    assert loudest.rank == 3
    assert loudest.text == "IndexError: index out of range in self"
    assert loudest.where.startswith("torchrun Root Cause")


def test_a_root_cause_killed_by_a_signal_is_the_signal_line() -> None:
    launcher = """\
Root Cause (first observed failure):
[0]:
  time      : 2026-11-30_06:58:59
  host      : localhost
  rank      : 4 (local_rank: 4)
  exitcode  : -9 (pid: 21960)  (SIGKILL)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 21960
=======================================================
"""
    loudest = loudest_error({"launcher.log": launcher})
    assert loudest == Loudest(
        text="Signal 9 (SIGKILL) received by PID 21960",
        rank=4,
        where="torchrun Root Cause (first observed failure)",
    )


def test_spawn_s_exited_process_names_the_process_index() -> None:
    launcher = (
        "    raise ProcessExitedException(\n"
        "torch.multiprocessing.spawn.ProcessExitedException: process 3 terminated with signal "
        "SIGKILL\n"
    )
    loudest = loudest_error({"launcher.log": launcher})
    assert loudest is not None
    assert (loudest.rank, loudest.text) == (3, "process 3 terminated with signal SIGKILL")


def test_without_a_launcher_summary_the_last_error_line_is_the_loudest() -> None:
    launcher = (
        "[E1130 06:48:40.377521597 socket.cpp:1028] [c10d] The client socket has timed out after "
        "20000ms while trying to connect to (127.0.0.1, 29533).\n"
        "torch.distributed.DistNetworkError: The client socket has timed out after 20000ms while "
        "trying to connect to (127.0.0.1, 29533).\n"
    )
    loudest = loudest_error({"launcher.log": launcher})
    assert loudest is not None
    assert loudest.text.startswith("torch.distributed.DistNetworkError:")
    assert loudest.rank is None


def test_prefixes_are_stripped_and_name_the_rank() -> None:
    text = (
        "[default2]:[rank2]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/"
        "tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:59106. This is typically caused "
        "by a remote worker crashing. Check the logs of the remote worker before reporting an "
        "error. GLHF! 🏖️\n"
        "[default3]:2026-11-30 06:34:26,309 INFO train: step 6 loss 6.8547\n"
    )
    [line] = error_lines(text)
    assert line.rank == 2
    assert line.text.startswith("RuntimeError: [/__w/pytorch")


def test_the_launcher_s_own_summary_is_not_an_error_line() -> None:
    text = "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
    assert error_lines(text) == []


@pytest.mark.parametrize(
    ("path", "rank"),
    [
        ("logs/none_x/attempt_0/3/stderr.log", 3),
        ("rank12.log", 12),
        ("node01/rank_4.out", 4),
        ("launcher.log", None),
        ("post.log", None),
    ],
)
def test_the_rank_a_file_name_states(path: str, rank: int | None) -> None:
    assert rank_of_file(path) == rank


# Lines as PyTorch, Gloo, the kernel and Slurm print them (captured here or quoted in
# /work/shared/reference and the public issues the corpus cites).
@pytest.mark.parametrize(
    ("line", "suggested"),
    [
        ("Signal 9 (SIGKILL) received by PID 21960", "process_killed"),
        ("Signal 15 (SIGTERM) received by PID 21956", "process_killed"),
        (
            "RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] "
            "Connection closed by peer [127.0.0.1]:59106. This is typically caused by a remote "
            "worker crashing. Check the logs of the remote worker before reporting an error. "
            "GLHF! 🏖️",
            "peer_process_died",
        ),
        (
            "torch.distributed.DistNetworkError: The client socket has timed out after 20000ms "
            "while trying to connect to (127.0.0.1, 29533).",
            "rendezvous_failure",
        ),
        (
            "RuntimeError: unable to allocate shared memory(shm) for file "
            "</torch_13759_3309160875_0>: No space left on device (28)",
            "shm_exhausted",
        ),
        ("OSError: [Errno 28] No space left on device", "disk_full"),
        (
            "RuntimeError: [enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: "
            "can't allocate memory: you tried to allocate 134217728 bytes. Error code 12 "
            "(Cannot allocate memory)",
            "host_oom",
        ),
        (
            "RuntimeError: [enforce fail at inline_container.cc:747] . open file failed with "
            "strerror: Permission denied",
            "filesystem_permission",
        ),
        (
            "[rank2]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 336.00 "
            "MiB. GPU  has a total capacity of 79.15 GiB of which 141.25 MiB is free. Process "
            "2109115 has 78.99 GiB memory in use. Of the allocated memory 77.21 GiB is allocated "
            "by PyTorch, and 283.51 MiB is reserved by PyTorch but unallocated. If reserved but "
            "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:"
            "True to avoid fragmentation.  See documentation for Memory Management  "
            "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
            "device_oom",
        ),
        ("IndexError: index out of range in self", "python_exception"),
        ("RuntimeError: basic_ios::clear: iostream error", "python_exception"),
        ("exitcode 1", None),
    ],
)
def test_what_a_line_suggests_at_face_value(line: str, suggested: str | None) -> None:
    assert naive_class(line) == suggested


def _loudest(text: str, rank: int | None) -> Loudest:
    return Loudest(text=text, rank=rank, where="test")


def test_a_victim_rank_misleads_even_when_the_class_is_silent() -> None:
    assert is_misleading(_loudest("exitcode 1", 0), True, "python_exception", 3)


def test_the_right_rank_with_a_cascade_class_still_misleads() -> None:
    loudest = _loudest("Signal 9 (SIGKILL) received by PID 1", 2)
    assert is_misleading(loudest, True, "host_oom", 2)


def test_the_right_rank_and_class_do_not_mislead() -> None:
    loudest = _loudest("IndexError: index out of range in self", 3)
    assert not is_misleading(loudest, True, "python_exception", 3)


def test_whole_job_events_compare_only_the_class() -> None:
    loudest = _loudest("Signal 15 (SIGTERM) received by PID 7", 0)
    assert is_misleading(loudest, True, "preemption", None)
    assert not is_misleading(loudest, True, "process_killed", None)


def test_clean_runs_never_mislead() -> None:
    assert not is_misleading(_loudest("IndexError: x", 0), False, None, None)
    assert not is_misleading(None, True, "python_exception", 1)
