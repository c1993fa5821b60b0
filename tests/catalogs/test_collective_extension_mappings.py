"""The reviewed mappings of PyTorch's DDP/RPC/pipelining and of the other collective libraries
(oneCCL, NVSHMEM, torch_npu, torch-ccl, torch_xla) send each message where it belongs.

Each text below is the format the emitter's own source prints (file named beside it, at a release
pinned in catalogs/<emitter>/source.yaml), with the `level` its extract.py records.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from catalogs.core.mapping import UNCLEAR_PRIOR, load_mapping
from catalogs.core.message import Message

CATALOGS = Path(__file__).resolve().parents[2] / "catalogs"


def _decide(emitter: str, text: str, level: str, file: str, style: str = "literal"):
    mapping = load_mapping(CATALOGS / emitter / "mapping.yaml")
    return mapping.decide(Message(emitter, "x", text, style, file, 1, level, ""))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("emitter", "text", "level", "file", "failure_class"),
    [
        # torch/nn/parallel/distributed.py (torch 2.13)
        (
            "pytorch_ddp",
            "device_ids can only be None or contain a single element.",
            "ValueError",
            "torch/nn/parallel/distributed.py",
            "ddp_usage_error",
        ),
        # torch/distributed/algorithms/join.py
        (
            "pytorch_ddp",
            "Detected at least one rank that exhausted inputs. Throwing across all ranks.",
            "RuntimeError",
            "torch/distributed/algorithms/join.py",
            "ddp_usage_error",
        ),
        # torch/csrc/distributed/rpc/rpc_agent.cpp (libtorch_cpu.so)
        (
            "pytorch_rpc",
            "Current RPC agent is not set! Did you initialize the RPC framework "
            "(e.g. by calling `rpc.init_rpc`)?",
            "FRAGMENT",
            "torch/csrc/distributed/rpc/rpc_agent.cpp",
            "framework_config_error",
        ),
        # torch/csrc/distributed/rpc/tensorpipe_agent.cpp
        (
            "pytorch_rpc",
            "RPC ran for more than set timeout ({} ms) and will now be marked with an error",
            "FRAGMENT",
            "torch/csrc/distributed/rpc/tensorpipe_agent.cpp",
            "collective_timeout",
        ),
        # torch/distributed/pipelining/_utils.py (torch 2.7.1)
        (
            "pytorch_pipelining",
            "{desc} has a shape mismatch: expected {expected.shape} actual {given.shape}",
            "PipeliningShapeError",
            "torch/distributed/pipelining/_utils.py",
            "shape_or_dtype_error",
        ),
        # oneCCL src/atl/util/pm/pmi_resizable_rt/pmi_resizable_simple.cpp (master)
        (
            "oneccl",
            "KVS get error: timeout limit: {} > {}, prefix: {}, key: {}",
            "LOG_ERROR",
            "src/atl/util/pm/pmi_resizable_rt/pmi_resizable_simple.cpp",
            "rendezvous_failure",
        ),
        # oneCCL src/atl/ofi/atl_ofi_helper.cpp
        (
            "oneccl",
            "can not open network providers",
            "LOG_ERROR",
            "src/atl/ofi/atl_ofi_helper.cpp",
            "network_config_error",
        ),
        # NVSHMEM src/host/mem/mem_heap.cpp (3.5.1)
        (
            "nvshmem",
            "nvshmem malloc failed (hint: check if total allocation has exceeded NVSHMEM "
            "symmetric size = %zu, NVSHMEM symmetric size can be increased using "
            "NVSHMEM_SYMMETRIC_SIZE environment variable)",
            "ERROR",
            "src/host/mem/mem_heap.cpp",
            "device_oom",
        ),
        # NVSHMEM src/modules/bootstrap/uid/bootstrap_uid.cpp
        (
            "nvshmem",
            "Message truncated : received %d bytes instead of %d",
            "ERROR",
            "src/modules/bootstrap/uid/bootstrap_uid.cpp",
            "rendezvous_failure",
        ),
        # torch_npu/csrc/core/npu/NPUCachingAllocator.cpp
        (
            "torch_npu",
            "NPU out of memory. Tried to allocate {} (NPU {}; {} total capacity; {} already "
            "allocated; {} current active; {} free; {}{} reserved in total by PyTorch) If reserved "
            "memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.",
            "RuntimeError",
            "torch_npu/csrc/core/npu/NPUCachingAllocator.cpp",
            "device_oom",
        ),
        # torch_npu/csrc/distributed/HCCLUtils.hpp
        (
            "torch_npu",
            "{}:{}:{} HCCL function error: {}, error code is {}{}",
            "RuntimeError",
            "torch_npu/csrc/distributed/HCCLUtils.hpp",
            "nccl_internal_error",
        ),
        # torch-ccl src/cpu/cpu_ccl.cpp
        (
            "torch_ccl",
            "allgather: number of output tensors should equal to the world size",
            "RuntimeError",
            "src/cpu/cpu_ccl.cpp",
            "shape_or_dtype_error",
        ),
        # torch_xla/_internal/pjrt.py (v2.8.1)
        (
            "torch_xla",
            "Runtime is already initialized. Do not use the XLA device before calling xmp.spawn.",
            "RuntimeError",
            "torch_xla/_internal/pjrt.py",
            "launch_config_error",
        ),
    ],
)
def test_a_message_that_states_its_mechanism_gets_its_class(
    emitter: str, text: str, level: str, file: str, failure_class: str
) -> None:
    style = "printf" if "%" in text else "brace" if "{" in text else "literal"
    decision = _decide(emitter, text, level, file, style)
    assert (decision.disposition, decision.failure_class) == ("mapped", failure_class)


@pytest.mark.parametrize(
    ("emitter", "text", "level", "file"),
    [
        # oneCCL src/coll/algorithms/algorithm_utils.cpp (master): a tuning hint
        (
            "oneccl",
            "[{} pipelining]: For best performance, (i) chunk size should be a multiple of a cache "
            "line ({} bytes), and (ii) buffers in all ranks should be aligned to {}",
            "LOG_WARN",
            "src/coll/algorithms/algorithm_utils.cpp",
        ),
        # torch/distributed/algorithms/join.py: a performance note, not a failure
        (
            "pytorch_ddp",
            "Detected uneven input skew of greater than {WARN_THRESHOLD}. This means that rank "
            "{self._rank} has at least {WARN_THRESHOLD} fewer inputs than other currently-active "
            "ranks. This level of skew could lead to performance degradation during training.",
            "UserWarning",
            "torch/distributed/algorithms/join.py",
        ),
    ],
)
def test_healthy_chatter_is_context_not_evidence(
    emitter: str, text: str, level: str, file: str
) -> None:
    assert _decide(emitter, text, level, file, "brace").disposition == "context"


def test_the_ncclsocket_code_nvshmem_vendors_is_left_to_the_nccl_catalog() -> None:
    decision = _decide(
        "nvshmem",
        "ncclSocketInit: Socket creation failed : %s",
        "ERROR",
        "src/modules/bootstrap/uid/ncclSocket/ncclsocket_socket.cpp",
        "printf",
    )
    assert decision.disposition == "excluded" and "NCCL" in (decision.reason or "")


@pytest.mark.parametrize(
    ("emitter", "text", "level", "file"),
    [
        # internal checks that name no mechanism, from each emitter's pinned source
        (
            "pytorch_rpc",
            "wrappedRpc cannot be null!",
            "FRAGMENT",
            "torch/csrc/distributed/autograd/rpc_messages/propagate_gradients_req.cpp",
        ),
        (
            "pytorch_pipelining",
            "Unsharding the same stage_idx={stage_idx} twice",
            "AssertionError",
            "torch/distributed/pipelining/schedules.py",
        ),
        (
            "oneccl",
            "not completed event is destroyed",
            "LOG_ERROR",
            "src/common/event/impls/host_event.cpp",
        ),
        ("nvshmem", "mutex lock failed", "EXIT", "src/host/util/cs.cpp"),
        (
            "torch_npu",
            "debugInfoWriter already registered",
            "RuntimeError",
            "torch_npu/csrc/distributed/HCCLUtils.cpp",
        ),
        (
            "torch_xla",
            "Computation has been moved\n",
            "XLA_CHECK",
            "torch_xla/csrc/runtime/computation_client.h",
        ),
    ],
)
def test_an_internal_check_keeps_a_low_prior(
    emitter: str, text: str, level: str, file: str
) -> None:
    decision = _decide(emitter, text, level, file)
    assert decision.disposition == "mapped"
    assert decision.confidence is not None and decision.confidence <= UNCLEAR_PRIOR
