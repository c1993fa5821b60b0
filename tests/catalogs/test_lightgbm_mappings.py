"""The LightGBM catalog: its reviewed mapping decides LightGBM's own messages as a reviewer would,
and real lines from public threads meet its signatures.

Format strings are copied from the named release's source (catalogs/lightgbm:
microsoft/LightGBM), with the level the extractor records. Every real line is copied verbatim
from the public thread named beside it.
"""

from __future__ import annotations

import pytest

from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_emitter_class, decide


@pytest.mark.parametrize(
    ("text", "level", "file", "disposition", "failure_class"),
    [
        # 3.3-4.6 src/network/socket_wrapper.hpp (TcpSocket::Recv): a peer went away
        (
            "Socket recv error, %s (code: %d)",
            "FATAL",
            "src/network/socket_wrapper.hpp",
            "mapped",
            "peer_process_died",
        ),
        (
            "Socket send error, %s (code: %d)",
            "FATAL",
            "src/network/socket_wrapper.hpp",
            "mapped",
            "peer_process_died",
        ),
        # 3.3-4.6 src/network/linkers_socket.cpp
        (
            "Binding port %d failed",
            "FATAL",
            "src/network/linkers_socket.cpp",
            "mapped",
            "rendezvous_failure",
        ),
        (
            "Machine list file doesn't contain the local machine",
            "FATAL",
            "src/network/linkers_socket.cpp",
            "mapped",
            "rendezvous_failure",
        ),
        # a retry while the workers link up: the run goes on
        (
            "Connecting to rank %d failed, waiting for %d milliseconds",
            "WARNING",
            "src/network/linkers_socket.cpp",
            "context",
            None,
        ),
        # 4.6 python-package/lightgbm/dask.py
        (
            "'local_listen_port' was provided in Dask training parameters, but at least one "
            "machine in the cluster has multiple Dask worker processes running on it. Please omit "
            "'local_listen_port' or pass 'machines'.",
            "LightGBMError",
            "python-package/lightgbm/dask.py",
            "mapped",
            "launch_config_error",
        ),
        # 3.3-4.6 src/treelearner/gpu_tree_learner.h: a CPU-only build asked for device=gpu
        (
            "GPU Tree Learner was not enabled in this build.\n"
            "Please recompile with CMake option -DUSE_GPU=1",
            "FATAL",
            "src/treelearner/gpu_tree_learner.h",
            "mapped",
            "dependency_error",
        ),
        # 3.3-4.6 src/io/config_auto.cpp: a parameter outside its range
        (
            "Check failed: (num_leaves) > (1) at %s, line %d .\n",
            "CHECK",
            "src/io/config_auto.cpp",
            "mapped",
            "framework_config_error",
        ),
        # 4.6 src/treelearner/serial_tree_learner.cpp: an internal check, cause unknown
        (
            "Check failed: (best_split_info.left_count) > (0) at %s, line %d .\n",
            "CHECK",
            "src/treelearner/serial_tree_learner.cpp",
            "mapped",
            "python_exception",
        ),
        # 3.3-4.6 src/c_api.cpp: a Dataset reused with other binning parameters
        (
            "Cannot change max_bin after constructed Dataset handle.",
            "FATAL",
            "src/c_api.cpp",
            "mapped",
            "framework_config_error",
        ),
        # 3.3-4.6 src/objective/multiclass_objective.hpp
        (
            "Label must be in [0, %d), but found %d in label",
            "FATAL",
            "src/objective/multiclass_objective.hpp",
            "mapped",
            "data_preprocessing_error",
        ),
        # 3.3-4.6 include/LightGBM/utils/chunked_array.hpp
        (
            "Memory exhausted! Cannot allocate new ChunkedArray chunk.",
            "FATAL",
            "include/LightGBM/utils/chunked_array.hpp",
            "mapped",
            "host_oom",
        ),
        # 3.3-4.6 src/boosting/gbdt.cpp: a notice LightGBM prints in healthy runs too
        (
            "Stopped training because there are no more leaves that meet the split requirements",
            "WARNING",
            "src/boosting/gbdt.cpp",
            "context",
            None,
        ),
        # 4.6 include/LightGBM/cuda/cuda_utils.hu: the CUDA error string is the evidence
        ("[CUDA] %s %s %d\n", "FATAL", "include/LightGBM/cuda/cuda_utils.hu", "excluded", None),
    ],
)
def test_lightgbm_messages(
    text: str, level: str, file: str, disposition: str, failure_class: str | None
) -> None:
    decision = decide("lightgbm", text, level, file)
    assert decision.disposition == disposition
    assert decision.failure_class == failure_class
    if failure_class == "python_exception":
        assert decision.confidence is not None and decision.confidence <= 0.35


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/microsoft/SynapseML/issues/1783 (SynapseML's wording of the Fatal text)
        (
            "23/01/05 14:07:26 WARN TaskSetManager: Lost task 60.0 in stage 28.0 (TID 17418)"
            " (node74-53-153-bdxs.qiyi.hadoop executor 12): java.lang.Exception: Network init"
            " call failed in LightGBM with error: Binding port 12412 failed",
            "rendezvous_failure",
        ),
        # github.com/dask/dask-lightgbm/issues/15
        (
            "LightGBMError: Machine list file doesn't contain the local machine",
            "rendezvous_failure",
        ),
        # github.com/lightgbm-org/LightGBM/issues/3489
        (
            "[LightGBM] [Fatal] Check failed: (best_split_info.left_count) > (0) at"
            " /__w/1/s/python-package/compile/src/treelearner/serial_tree_learner.cpp, line 630 .",
            "python_exception",
        ),
        # github.com/lightgbm-org/LightGBM/issues/5200
        (
            "[LightGBM] [Fatal] Reducing `min_data_in_leaf` with `feature_pre_filter=true` may"
            " cause unexpected behaviour for features that were pre-filtered by the larger"
            " `min_data_in_leaf`.",
            "framework_config_error",
        ),
        # github.com/mljar/mljar-supervised/issues/285
        (
            "[LightGBM] [Fatal] Do not support special JSON characters in feature name.",
            "data_preprocessing_error",
        ),
        # github.com/wildltr/ptranking/issues/9
        (
            "[LightGBM] [Fatal] Label 1330 is not less than the number of label mappings (31)",
            "data_preprocessing_error",
        ),
    ],
)
def test_a_real_line_gets_lightgbm_s_class(matcher: Matcher, text: str, failure_class: str) -> None:
    assert_emitter_class(matcher, text, "lightgbm_cat", failure_class)


def test_healthy_lightgbm_network_lines_meet_no_catalog_signature(matcher: Matcher) -> None:
    # github.com/lightgbm-org/LightGBM/issues/4074 and issues/3782: the network linking up
    healthy = (
        "2021-07-31T19:47:50.8601027Z [LightGBM] [Info] Binding port 52395 succeeded\n"
        "2021-07-31T19:47:50.8602950Z [LightGBM] [Info] Connected to rank 0\n"
        "2021-07-31T19:47:50.8603478Z [LightGBM] [Info] Local rank: 1, total number of"
        " machines: 2\n"
        "[LightGBM] [Warning] Set TCP_NODELAY failed\n"
    )
    assert not [m for m in matcher.scan_text(healthy) if m.signature.family == "lightgbm_cat"]
