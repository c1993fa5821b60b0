"""The abnormal-line judgement: by what a line says, not only by the level it was logged at."""

from __future__ import annotations

import pytest

from denpex.hybrid.abnormal import Level, is_abnormal, level_of, never_abnormal
from denpex.hybrid.harvest import lexicon_matcher


def judged(text: str, carried: bool | None = None) -> bool:
    """The judgement of one line, as the harvest makes it (the lexicon's winning signature)."""
    hits = lexicon_matcher().scan_text(text)
    return any(is_abnormal(text, hit.signature, carried) for hit in hits)


@pytest.mark.parametrize(
    "line",
    [
        # NCCL's WARN lines report failures (include/shm.h, misc/socket.cc, transport/net_ib.cc).
        "gpu2-ru7:2143:2561 [1] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : "
        "No space left on device",
        "a100-st-p4d24xlarge-22:183006:183181 [1] misc/socket.cc:538 NCCL WARN Net : Connection "
        "closed by remote peer a100-st-p4d24xlarge-22<41312>",
        # nccl-tests' NCCLCHECK: "%s: Test NCCL failure %s:%d '%s'".
        "node01: Test NCCL failure common.cu:1005 'unhandled system error (run with "
        "NCCL_DEBUG=INFO for details) / '",
        # text-generation-launcher's main() returning the router's warm-up error.
        'Error: Warmup(Generation("Not enough memory to handle 4096 prefill tokens. You need to '
        'decrease `--max-batch-prefill-tokens`"))',
        # An exception class that is not called ...Error: the module-qualified traceback tail.
        "quillpack.errors.ShardFooterCorrupt: footer checksum 0x9f3a1c22 does not match "
        "0x00000000 in shard-00017.qpk",
        # A watchdog's C++ stack pasted without its header line.
        "[rank1]: frame #4: c10d::ProcessGroupNCCL::watchdogHandler() + 0x1a0 (0x7f8a6c5f1a50 "
        "in /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)",
        # A C helper's error in prose (bitsandbytes' CUDA_CHECK_RETURN, public issue
        # hiyouga/LlamaFactory#2965).
        "Error invalid configuration argument at line 216 in file /mmfs1/gscratch/zlab/"
        "timdettmers/git/bitsandbytes/csrc/ops.cu",
        # Launchers' death summaries.
        "Root Cause (first observed failure):",
        "mpirun noticed that process rank 0 with PID 4121 on node gpu-07 exited on signal 9 "
        "(Killed).",
        # Scheduler failure states: sacct, a Kubernetes job condition, Slurm's sinfo reason.
        "123456.0     python   gpu        acct         8  NODE_FAIL      1:0",
        "    Type:                  Failed",
        '        "cyclecloud_node_fail slurm     2022-11-22T13:25:08 viz3d-1",',
        # A live process's stacks, dumped because it looked stuck: faulthandler's thread header
        # (deepspeedai/DeepSpeed#860) and py-spy dump's.
        "Thread 0x00007f57caf71740 (most recent call first):",
        'Thread 0x7F2B4A3FE740 (idle): "MainThread"',
        # An Xid event quoted without the kernel's NVRM prefix (skypilot-org/skypilot#10468).
        "Xid 78: Guest driver is incompatible with host driver",
        # A one-letter error head says the level whatever the words: XLA's rendezvous watchdog
        # (jax-ml/jax#22740) and Ray's core worker (ray-project/ray#27710).
        "2024-07-29 17:14:59.920189: E external/xla/xla/service/rendezvous.cc:38] This thread "
        "has been waiting for `initialize clique for rank 6` for 10 seconds and may be stuck.",
        "[2022-08-09 09:45:53,301 E 981 1038] core_worker.cc:489: :info_message: Attempting to "
        "recover 16505 lost objects by resubmitting their tasks.",
        # gRPC's status with nothing else (jax-ml/jax#35905: a worker never registered).
        "DEADLINE_EXCEEDED: Deadline Exceeded",
        # pydantic's detail line without its header (hiyouga/LlamaFactory#5252).
        "[rank3]:   Input should be a valid integer, got a number with a fractional part "
        "[type=int_from_float, input_value=15099494.4, input_type=float]",
    ],
)
def test_a_line_that_reports_a_failure_is_abnormal_whatever_its_level(line: str) -> None:
    assert judged(line)


@pytest.mark.parametrize(
    "line",
    [
        # evals/healthy/esm2-ddp-worker-0.log: NCCL looks for an optional plugin.
        "esm2-ddp-worker-0:44:44 [0] NCCL INFO NET/Plugin: Failed to find ncclTunerPlugin_v2 "
        "symbol.",
        # evals/corpus/inject-clean-noisy-warnings: a Python warning is advice.
        "/work/wt-corpus/evals/inject/worker.py:213: UserWarning: Detected call of "
        "`lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and later, you should "
        "call them in the opposite order: `optimizer.step()` before `lr_scheduler.step()`.  "
        "Failure to do this will result in PyTorch skipping the first value of the learning "
        "rate schedule.",
        # evals/healthy/torchrun-detail-debug.log style configuration echo at INFO.
        "I1130 07:13:03.898000 29518 torch/distributed/launcher/api.py:254]   rdzv_configs"
        "             : {'timeout': 900}",
        "123456.0     python   gpu        acct         8  COMPLETED      0:0",
        # evals/heldout/issue-kubeflow-trainer-1168: TensorFlow's own warning, at exit.
        "2020-06-08 05:30:15.889706: W tensorflow/core/kernels/data/generator_dataset_op.cc:103] "
        "Error occurred when finalizing GeneratorDataset iterator: Cancelled: Operation was "
        "cancelled",
        # The same heads at info level (gRPC's server start, Ray's raylet shutting down on a
        # clean exit).
        "I0412 18:43:30.090938   302 tcp_server_posix.cc:216] Server listening on 0.0.0.0:6379",
        "[2025-02-11 20:08:00,117 I 4121 4121] main.cc:287: Shutting down...",
    ],
)
def test_healthy_chatter_is_not_abnormal(line: str) -> None:
    assert not judged(line)


def test_a_frame_stack_takes_the_judgement_of_the_message_it_continues() -> None:
    # evals/healthy/c10d-rendezvous-node-b.log: libuv's TCPStore falls back to IPv4 at INFO and
    # prints the stack of the exception it caught; on its own the same stack is abnormal.
    frame = (
        "frame #0: c10::Error::Error(c10::SourceLocation, std::__cxx11::basic_string<char, "
        "std::char_traits<char>, std::allocator<char> >) + 0x9d (0x7fd3df546b8d in "
        "/usr/lib/python3.11/site-packages/torch/lib/libc10.so)"
    )
    assert not judged(frame, carried=False)
    assert judged(frame, carried=True)
    assert judged(frame)


def test_levels_are_read_after_the_launcher_prefixes() -> None:
    assert level_of("[default1]:2026-11-30 06:34:24,917 INFO train: step 0 loss 7.0618") is (
        Level.info
    )
    assert (
        level_of(
            "gpu617:22841:22841 [0] bootstrap.cc:37 NCCL WARN Bootstrap : no socket interface found"
        )
        is Level.warning
    )
    assert (
        level_of(
            "E1130 06:50:23.547000 16731 torch/distributed/elastic/multiprocessing/"
            "api.py:1002] failed (exitcode: 1)"
        )
        is Level.error
    )
    assert level_of("[rank2]: KeyError: 'label'") is Level.none
    # TensorFlow's (absl's) C++ head: the level letter after the time, before the source file.
    assert (
        level_of(
            "2020-06-08 05:30:15.889706: W tensorflow/core/kernels/data/generator_dataset_op.cc:"
            "103] Error occurred when finalizing GeneratorDataset iterator"
        )
        is Level.warning
    )
    # c10's own head (torch 2.4 on) leaves the month unpadded (pytorch/pytorch#134006).
    assert level_of("[W820 11:37:20.000000000 ProcessGroupNCCL.cpp:4115] [PG 0 Rank 0] x") is (
        Level.warning
    )


def test_what_is_never_abnormal_is_known_from_the_line_alone() -> None:
    """The scan drops such matches before building their events; the judgement agrees."""
    tuner = (
        "esm2-ddp-worker-0:44:44 [0] NCCL INFO NET/Plugin: Failed to find ncclTunerPlugin_v2 "
        "symbol."
    )
    (hit,) = lexicon_matcher().scan_text(tuner)
    assert never_abnormal(tuner, hit.signature) and not judged(tuner)
    warned = (
        "gpu2-ru7:2143:2561 [1] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : "
        "No space left on device"
    )
    assert not any(never_abnormal(warned, h.signature) for h in lexicon_matcher().scan_text(warned))
    frame = "frame #0: c10::Error::Error(c10::SourceLocation) + 0x9d (0x7fd3 in libc10.so)"
    for hit in lexicon_matcher().scan_text(frame):
        assert not never_abnormal(frame, hit.signature), "a continuation waits for its message"
