"""Real lines MindSpore printed in failed runs meet the signatures generated from its wheels
(catalogs/mindspore), and its reviewed mapping decides messages as a reviewer would.

Every log line below is copied from the public thread named beside it; the mapping cases are
texts from the 2.7 wheel (Python format strings, or one literal piece of a C++ log stream).
"""

from __future__ import annotations

import pytest

from denpex.match.scan import Matcher
from tests.catalogs.mappings import catalog_hits, decide

FAMILY = "mindspore_cat"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/candle-org/MindAct/issues/1983: msrun's launcher after one worker died
        # (MindSpore 2.5 on 910A, four NPUs)
        (
            "[ERROR] ME(162078:281473590168608,MainProcess):2025-03-10-09:40:38.720.000"
            " [mindspore/parallel/cluster/process_entity/_api.py:331] Scheduler process 162146"
            " exit with exception.",
            "peer_process_died",
        ),
        (
            "[WARNING] ME(162078:281473590168608,MainProcess):2025-03-10-09:40:12.444.000"
            " [mindspore/parallel/cluster/process_entity/_api.py:318] There's worker exits with"
            " exception, kill all other workers.",
            "peer_process_died",
        ),
        # github.com/candle-org/MindAct/issues/1893: a worker of a data-parallel fine-tune exited
        (
            "[ERROR] ME(130371:281473296949264,MainProcess):2024-12-26-14:22:26.839.923"
            " [mindspore/parallel/cluster/process_entity/_api.py:268] Worker process 130673 exit"
            " with exception.",
            "peer_process_died",
        ),
    ],
)
def test_a_real_mindspore_line_gets_its_class(
    matcher: Matcher, text: str, failure_class: str
) -> None:
    hits = catalog_hits(matcher, text, FAMILY)
    assert hits, f"no {FAMILY} signature matched"
    assert failure_class in {m.signature.failure_class for m in hits}
    assert {m.signature.role.value for m in hits} == {"symptom"}


@pytest.mark.parametrize(
    ("text", "level", "failure_class"),
    [
        (
            "Heartbeat timeout, the tcp connection to scheduler is lost, please check the status"
            " of scheduler.",
            "FRAGMENT",
            "peer_process_died",
        ),
        ("Worker node connect to scheduler timeout!", "FRAGMENT", "rendezvous_failure"),
        (
            "Configured scheduler port MS_SCHED_PORT is occupied by other processes.",
            "FRAGMENT",
            "rendezvous_failure",
        ),
        ("The device memory is not enough, the free memory size is ", "FRAGMENT", "device_oom"),
        (
            "Invalid environment variable 'RANK_ID', it should not be empty.",
            "FRAGMENT",
            "launch_config_error",
        ),
        (
            "Caught UCEError of type HBM_MULTI_BIT_ECC_ERROR but can not repair,"
            " hbm_error_time={hbm_error_time}",
            "ERROR",
            "gpu_memory_ecc",
        ),
        ("Call runtime aclrtSynchronizeStreamWithTimeout error.", "FRAGMENT", "unknown"),
    ],
)
def test_the_reviewed_mapping_names_the_cause(text: str, level: str, failure_class: str) -> None:
    file = "mindspore/ccsrc/cluster/topology/compute_graph_node.cc"
    decision = decide("mindspore", text, level, file)
    assert decision.disposition == "mapped"
    assert decision.failure_class == failure_class


@pytest.mark.parametrize(
    "text",
    [
        "Set op execute timeout: ",
        "HCCL_CONNECT_TIMEOUT is ",
        "Connection to the scheduler has been establised successfully.",
    ],
)
def test_settings_and_progress_pieces_are_context(text: str) -> None:
    file = "mindspore/ccsrc/plugin/ascend/res_manager/ascend_res_manager.cc"
    assert decide("mindspore", text, "FRAGMENT", file).disposition == "context"
