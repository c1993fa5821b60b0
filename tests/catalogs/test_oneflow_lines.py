"""Real lines OneFlow printed in failed runs meet the signatures generated from its source
(catalogs/oneflow), and its reviewed mapping decides messages as a reviewer would.

Every log line below is copied from the public thread named beside it; the mapping cases are
format strings from the named release's source.
"""

from __future__ import annotations

import pytest

from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_catalog_reads, assert_mapped

FAMILY = "oneflow_cat"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/Oneflow-Inc/oneflow/pull/10042: three processes, one rank's RPC server not
        # up when the bootstrap server checked (OneFlow master, March 2023)
        (
            "W20230327 06:15:53.597208 2091708 rank_info_bootstrap_server.cpp:103] BootstrapServer"
            " not ready, rpc server on some rank have not been created successfully. Failed at 2"
            " times, total ranks(world_size): 3, ready ranks: 2",
            "rendezvous_failure",
        ),
        # github.com/Oneflow-Inc/oneflow/issues/10547: oneflow.distributed.launch with two
        # processes on one host, neither reaching the other's server (July 2024)
        (
            "W20240730 07:54:40.090461 27910 rpc_client.cpp:190] LoadServer 127.0.0.1 Failed at 0"
            " times error_code 14 error_message failed to connect to all addresses",
            "rendezvous_failure",
        ),
        # github.com/Oneflow-Inc/libai/issues/150: the control client's heartbeat to rank 0
        # failed after rank 0 died (OneFlow 0.7 dev, March 2022)
        (
            "F20220301 16:13:39.021886 52842 ctrl_client.cpp:54] Check failed:"
            " rpc_client_.GetStubAt(i)->CallMethod<CtrlMethod::kLoadServer>( &client_ctx, request,"
            " &response).error_code() == grpc::StatusCode::OK (14 vs. 0) Machine 0 lost",
            "peer_process_died",
        ),
    ],
)
def test_real_oneflow_lines_get_their_class(
    matcher: Matcher, text: str, failure_class: str
) -> None:
    assert_catalog_reads(matcher, text, FAMILY, failure_class)


@pytest.mark.parametrize(
    ("text", "level", "file", "failure_class"),
    [
        # 1.0 oneflow/core/control/rank_info_bootstrap_server.cpp
        (
            "CheckServerStatus() failed, rpc server on some rank are not ready, please check"
            " whether the processes on all ranks are created successfully.",
            "FATAL",
            "oneflow/core/control/rank_info_bootstrap_server.cpp",
            "rendezvous_failure",
        ),
        # 1.0 oneflow/core/control/ctrl_server.cpp
        (
            "Port {} is unavailable",
            "CHECK",
            "oneflow/core/control/ctrl_server.cpp",
            "rendezvous_failure",
        ),
    ],
)
def test_the_mapping_decides_oneflow_s_messages(
    text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped("oneflow", text, level, file, failure_class)
