"""Real lines MSCCL++ printed in failed runs meet the signatures generated from its source
(catalogs/mscclpp), and its reviewed mapping decides messages as a reviewer would.

Every line in the first test is copied from the public thread named beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from catalogs.mscclpp.extract import extract
from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_catalog_reads, assert_mapped, catalog_hits, decide

FAMILY = "mscclpp_cat"
RULES = Path(__file__).resolve().parents[2] / "rules"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/microsoft/mscclpp/issues/315: a proxy channel's RDMA write completed with
        # status 12 (retry exceeded), which MSCCL++ prints as an errno
        (
            "  what():  a work item failed: status 12 (Ib failure: Cannot allocate memory)",
            "network_fabric_error",
        ),
        # github.com/microsoft/mscclpp/issues/496: GPU memory the HCA could not register
        (
            "mscclpp._mscclpp.IbError: (14, 'ibv_reg_mr failed (errno 14) (Ib failure: Bad"
            " address)')",
            "network_config_error",
        ),
        # github.com/microsoft/mscclpp/issues/254: more GPUs than HCAs on the node
        ("  what():  IB transport out of range: 1 >= 1", "network_config_error"),
        # github.com/microsoft/mscclpp/issues/431: RoCE ports whose queue pairs could not be set up
        (
            'C++ exception with description "ibv_modify_qp failed (errno 19) (Ib failure: No such'
            ' device)" thrown in the test body.',
            "network_config_error",
        ),
        # github.com/microsoft/mscclpp/issues/554: NVLS buffers too small for the message; the
        # run passed with MSCCLPP_FORCE_DISABLE_NVLS
        (
            "  what():  This NVLS connection cannot map the requested devBuffSize (Mscclpp"
            " failure: InvalidUsage)",
            "framework_config_error",
        ),
        # github.com/microsoft/mscclpp/issues/788: cuMem memory registered on an A100 (no NVLS)
        (
            "RuntimeError: cuMemMap is used in env without NVLS support (mscclpp failure:"
            " InvalidUsage)",
            "framework_config_error",
        ),
        # github.com/microsoft/mscclpp/issues/224: an API use MSCCL++ does not support
        (
            "  what():  src is remote, which is not supported (Mscclpp failure: InvalidUsage)",
            "python_exception",
        ),
    ],
)
def test_a_real_mscclpp_line_gets_its_class(
    matcher: Matcher, text: str, failure_class: str
) -> None:
    assert_catalog_reads(matcher, text, FAMILY, failure_class)


def test_a_cuda_call_that_failed_is_read_as_mscclpps_call(matcher: Matcher) -> None:
    # github.com/microsoft/mscclpp/issues/493: MSCCLPP_CUDATHROW after a kernel's assertion;
    # the catalog names MSCCL++'s call at its low prior (the CUDA error after it, and the
    # kernel's assertion printed before it, say why)
    text = (
        "[2025-04-04 14:03:48,002 E 2416966 2430476] logging.cc:113: Unhandled exception:"
        " N7mscclpp9CudaErrorE. what(): Call to cudaStreamSynchronize(stream_) failed."
        " /export/home/me/mscclpp/src/connection.cc:89 (Cuda failure: device-side assert"
        " triggered)"
    )
    hits = catalog_hits(matcher, text, FAMILY)
    assert {m.signature.failure_class for m in hits} == {"nccl_internal_error"}
    assert all(m.signature.confidence <= 0.35 for m in hits)


def test_a_short_text_is_read_only_after_the_loggers_prefix(matcher: Matcher) -> None:
    # 0.9 and later: THROW's what() starts with the logger's header, so "pollSendCq failed" is
    # MSCCL++'s there and nobody's alone
    header = "2026-07-21 12:00:00 MSCCLPP 4242 ERROR NET connection.cc:473 "
    line = f"  what():  {header}pollSendCq failed (Ib failure: Connection timed out)"
    assert_catalog_reads(matcher, line, FAMILY, "network_fabric_error")
    assert not catalog_hits(matcher, "pollSendCq failed", FAMILY)


@pytest.mark.parametrize(
    "text",
    [
        # NCCL's own socket wording, which MSCCL++'s bootstrap kept inside its exceptions
        "gpu-017:20315:20402 [3] misc/socket.cc:540 NCCL WARN ncclSocketRecv: socket state (3)"
        " is not ready",
        # NVSHMEM's UID bootstrap prints NCCL's wording too
        "/build/nvshmem/src/modules/bootstrap/uid/bootstrap_uid.cpp:bootstrap_net_recv:99:"
        " Message truncated : received 36 bytes instead of 1",
    ],
)
def test_the_bootstrap_wording_other_libraries_share_is_not_read_as_mscclpp(
    matcher: Matcher, text: str
) -> None:
    assert not catalog_hits(matcher, text, FAMILY)


@pytest.mark.parametrize(
    ("text", "level", "file", "failure_class"),
    [
        (
            "nvidia_peermem kernel module is not loaded",
            "THROW NET SystemError",
            "src/core/ib.cc",
            "network_config_error",
        ),
        (
            "TcpBootstrap connection timeout",
            "Timeout",
            "src/bootstrap/bootstrap.cc",
            "rendezvous_failure",
        ),
        (
            "NET/Socket : No usable listening interface found",
            "InternalError",
            "src/bootstrap/bootstrap.cc",
            "network_config_error",
        ),
        (
            "Host2HostSemaphore::wait timed out",
            "THROW CONN Timeout",
            "src/core/semaphore.cc",
            "collective_timeout",
        ),
        (
            "Failed to load libibverbs: {}",
            "IbError",
            "src/include/ibverbs_wrapper.hpp",
            "dependency_error",
        ),
        (
            "ncclAllToAll is currently unavailable",
            "WARN NCCL",
            "src/ext/nccl/nccl.cc",
            "framework_config_error",
        ),
        (
            "Cannot open the shared library specified by MSCCLPP_NCCL_LIB_PATH: %s",
            "WARN",
            "apps/nccl/src/nccl.cu",
            "dependency_error",
        ),
        (
            "Plan name does not match",
            "ExecutorError",
            "src/executor/execution_plan.cc",
            "framework_config_error",
        ),
        (
            "(loadInbound() < expected)",
            "POLL_ASSERT",
            "include/mscclpp/semaphore_device.hpp",
            "collective_timeout",
        ),
        (
            "sizePerRank % alignment == 0",
            "DEVICE_ASSERT",
            "apps/nccl/src/allreduce.hpp",
            "device_side_assert",
        ),
        (
            "Call to cuMulticastCreate(&handle, &prop) failed. {}:{}",
            "CuError",
            "src/core/gpu_ipc_mem.cc",
            "nvlink_error",
        ),
    ],
)
def test_the_mapping_gives_a_mechanism_its_class(
    text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped("mscclpp", text, level, file, failure_class)


def test_notices_fallbacks_and_retries_get_no_signature() -> None:
    for text, level in [
        ("Call to connect returned %s, retrying", "INFO"),
        ("CudaIpc import failed on same host, falling back to IB transport: {}", "WARN GPU"),
        ("ncclGroupStart is currently unavailable, return success", "WARN NCCL"),
        (
            "IB: CQ is almost full ({} / {}). The connection needs to be flushed to prevent"
            " timeout errors.",
            "WARN NET",
        ),
    ]:
        assert decide("mscclpp", text, level, "src/x.cc").disposition == "context", text


def test_the_low_default_stays_low() -> None:
    decision = decide("mscclpp", "Transport data not found", "InternalError", "src/x.cc")
    assert decision.disposition == "mapped"
    assert decision.rule == "default"
    assert decision.confidence is not None and decision.confidence <= 0.35


def test_the_extractor_reads_each_way_mscclpp_reports(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "ib.cc").write_text(
        '#include "debug.h"\n'
        "void IbMr::IbMr() {\n"
        "  if (mr == nullptr) {\n"
        "    std::stringstream err;\n"
        '    err << "ibv_reg_mr failed (errno " << errno << ")";\n'
        "    throw mscclpp::IbError(err.str(), errno);\n"
        "  }\n"
        '  if (!ok) throw Error("nvidia_peermem kernel module is not loaded",'
        " ErrorCode::InternalError);\n"
        '  WARN("IB: CQ is almost full ( %d / %d ).", a, b);\n'
        '  INFO(MSCCLPP_NET, "Call to connect returned %s, retrying", strerror(errno));\n'
        '  INFO(MSCCLPP_NET, "Connected to %s", name);\n'
        "  MSCCLPP_CUDATHROW(cudaIpcOpenMemHandle(&base,   handle, flags));\n"
        "}\n"
    )
    (src / "connection.cc").write_text(
        '#include "logger.hpp"\n'
        "void IBConnection::flush() {\n"
        '  THROW(NET, IbError, errno, "pollSendCq failed");\n'
        '  THROW(CONN, Error, ErrorCode::Timeout, "pollSendCq timed out: waited for ", t,'
        ' " seconds");\n'
        '  WARN(NET, "IBConnection recvThreadFunc: ", msg);\n'
        "}\n"
    )
    include = tmp_path / "include" / "mscclpp"
    include.mkdir(parents=True)
    (include / "fifo_device.hpp").write_text(
        "#define POLL_MAYBE_JAILBREAK(__cond, __max_spin_cnt) \\\n"
        "  MSCCLPP_ASSERT_DEVICE((__spin_cnt++ != __max_spin_cnt), #__cond);\n"
        "void sync() {\n"
        "  OR_POLL_MAYBE_JAILBREAK((head >= tail), (flag != 0), maxSpinCount);\n"
        '  MSCCLPP_ASSERT_DEVICE(bytes != 0, "bytes must not be zero");\n'
        "  assert(size % sizeof(T) == 0);\n"
        "}\n"
    )
    found = {(m.level, m.text, m.style) for m in extract(tmp_path, "0.8")}
    assert found == {
        ("IbError", "ibv_reg_mr failed (errno {})", "brace"),
        ("InternalError", "nvidia_peermem kernel module is not loaded", "literal"),
        ("WARN", "IB: CQ is almost full ( %d / %d ).", "printf"),
        ("INFO", "Call to connect returned %s, retrying", "printf"),
        ("CudaError", "Call to cudaIpcOpenMemHandle(&base, handle, flags) failed. {}:{}", "brace"),
        ("THROW NET IbError", "pollSendCq failed", "literal"),
        ("THROW CONN Timeout", "pollSendCq timed out: waited for {} seconds", "brace"),
        ("WARN NET", "IBConnection recvThreadFunc: {}", "brace"),
        ("POLL_ASSERT", "(head >= tail)(flag != 0)", "literal"),
        ("DEVICE_ASSERT", "bytes must not be zero", "literal"),
        ("DEVICE_ASSERT", "size % sizeof(T) == 0", "literal"),
    }


def test_the_catalog_reads_every_pinned_ref() -> None:
    accounting = json.loads((RULES / FAMILY / "CATALOG.json").read_text())
    read = [row["line"] for row in accounting["releases"]]
    assert read == ["0.6", "0.8", "0.10"]
    assert all(row["found"] > 0 and row["signatures"] > 0 for row in accounting["releases"])
