"""Real lines Horovod, Open MPI, UCX and XLA printed in failed jobs meet their signatures.

Every line below is copied from the public thread named beside it. The catalog signatures come from
catalogs/horovod, catalogs/openmpi, catalogs/prrte and catalogs/ucx; the hand-written ones in
rules/openmpi and rules/horovod state the failing rank where the launcher names it.
"""

from __future__ import annotations

import pytest

from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_emitter_class


def _top(matcher: Matcher, text: str):
    found = [m for m in matcher.scan_text(text) if m.signature.role.value != "context"]
    assert found, f"nothing matched {text[:80]!r}"
    return max(found, key=lambda m: m.signature.priority)


@pytest.mark.parametrize(
    ("text", "family", "failure_class"),
    [
        # github.com/horovod/horovod/issues/1012 (stall inspector, 0.16)
        (
            "[1,0]<stderr>:[2019-04-13 13:56:31.861697: W horovod/common/operations.cc:588] One or"
            " more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks"
            " and are waiting for remainder of ranks for more than 60 seconds. This may indicate"
            " that different ranks are trying to submit different tensors or that only subset of"
            " ranks is submitting tensors, which will cause deadlock.",
            "horovod_cat",
            "collective_timeout",
        ),
        # github.com/horovod/horovod/issues/3412
        (
            "[1,0]<stderr>:Horovod has been shut down. This was caused by an exception on one of"
            " the ranks or an attempt to allreduce, allgather or broadcast a tensor after one of"
            " the ranks finished execution. If the shutdown was caused by an exception, you should"
            " see the exception in the log before the first shutdown message.",
            "horovod_cat",
            "peer_process_died",
        ),
        # github.com/NVIDIA/DeepLearningExamples/issues/972 (TensorFlow's op kernel relays it)
        (
            "2021-07-22 05:04:29.589233: W tensorflow/core/framework/op_kernel.cc:1651]"
            " OP_REQUIRES failed at mpi_ops.cc:316 : Unknown: Horovod has been shut down. This was"
            " caused by an exception on one of the ranks or an attempt to allreduce, allgather or"
            " broadcast a tensor after one of the ranks finished execution. If the shutdown was"
            " caused by an exception, you should see the exception in the log before the first"
            " shutdown message.",
            "horovod_cat",
            "peer_process_died",
        ),
        # github.com/horovod/horovod/issues/2043 (Open MPI 4's out-of-band TCP)
        (
            "A process or daemon was unable to complete a TCP connection\nto another process:\n"
            "  Local host:    psxi1mzh8\n  Remote host:   psfwnezg3\n"
            "This is usually caused by a firewall on the remote host. Please",
            "openmpi",
            "network_config_error",
        ),
        # github.com/open-mpi/ompi/issues/6618 (a worker pod killed under mpirun)
        (
            "ORTE has lost communication with a remote daemon.\n\n"
            "HNP daemon : [[11377,0],0] on node "
            "i39030a4a38d4a3abcb17e488a3141ef-mpijob-0-launcher-ksczd\n"
            "Remote daemon: [[11377,0],1] on node "
            "i39030a4a38d4a3abcb17e488a3141ef-mpijob-0-worker-0",
            "openmpi",
            "node_failure",
        ),
        # github.com/radical-cybertools/radical.pilot/issues/2417
        (
            "An ORTE daemon has unexpectedly failed after launch and before\n"
            "communicating back to mpirun. This could be caused by a number",
            "openmpi_cat",
            "rendezvous_failure",
        ),
        # github.com/horovod/horovod/issues/978 (Open MPI 3.x/4.0: only the help text's first
        # lines pasted, wrapped where that release wraps them, not where 4.1 does)
        (
            "There are not enough slots available in the system to satisfy the 2 slots \n"
            "that were requested by the application:\n  python\n\n"
            "Either request fewer slots for your application, or make more slots available\n"
            "for use.",
            "openmpi_cat",
            "launch_config_error",
        ),
        # github.com/awslabs/awsome-distributed-training/issues/647 (ulimit -l was 65536)
        (
            "Libfabric error: (-12) Cannot allocate memory",
            "infiniband",
            "fd_or_process_limit",
        ),
        # github.com/open-mpi/ompi/issues/2661
        (
            "mpirun noticed that process rank 0 with PID 21183 on node host01 exited on signal 9"
            " (Killed).",
            "openmpi",
            "process_killed",
        ),
        # github.com/openucx/ucx/issues/8746 (UCX 1.13's locked-memory advice)
        (
            "[1668693503.473099] [ampere:1188443:0]          ib_log.c:246  UCX  ERROR mlx5_0:"
            " ibv_create_cq() failed: Cannot allocate memory. Please set max locked memory"
            " (ulimit -l) to 'unlimited' (current: 64 kbytes)",
            "infiniband",
            "fd_or_process_limit",
        ),
        # github.com/marin-community/levanter/issues/727 (XLA GPU, absl CHECK)
        (
            "F0912 11:59:01.941641  741969 shape_tree.cc:54] Check failed:"
            " result->children_start_id >= 0 (-1 vs. 0)",
            "python",
            "native_crash",
        ),
    ],
)
def test_a_real_line_gets_its_emitter_s_class(
    matcher: Matcher, text: str, family: str, failure_class: str
) -> None:
    assert_emitter_class(matcher, text, family, failure_class)


def test_mpirun_s_first_failed_process_is_stated_as_the_rank_of_the_line(matcher: Matcher) -> None:
    # github.com/E3SM-Project/scream/pull/1762: Process name [[jobid,jobindex],vpid], vpid = rank.
    text = (
        "--------------------------------------------------------------------------\n"
        "mpiexec detected that one or more processes exited with non-zero status, thus causing\n"
        "the job to be terminated. The first process to do so was:\n"
        "\n"
        "  Process name: [[2663,1],3]\n"
        "  Exit code:    1\n"
        "--------------------------------------------------------------------------\n"
    )
    top = _top(matcher, text)
    assert top.signature.id == "openmpi.mpirun_nonzero_exit"
    assert top.captures["rank"] == "3"
    assert top.captures["exitcode"] == "1"
    assert top.event.rank == 3


def test_mpirun_s_signal_report_states_the_rank_and_host(matcher: Matcher) -> None:
    # github.com/3dem/relion/issues/112
    line = (
        "mpirun noticed that process rank 4 with PID 0 on node localhost exited on signal 9"
        " (Killed)."
    )
    top = _top(matcher, line)
    assert top.signature.id == "openmpi.mpirun_rank_killed"
    assert top.event.rank == 4
    assert top.event.who.host == "localhost"


def test_a_stall_warning_is_a_symptom_that_cannot_settle_a_diagnosis(matcher: Matcher) -> None:
    line = (
        "One or more tensors were submitted to be reduced, gathered or broadcasted by subset of"
        " ranks and are waiting for remainder of ranks for more than 60 seconds. This may indicate"
        " that different ranks are trying to submit different tensors or that only subset of ranks"
        " is submitting tensors, which will cause deadlock."
    )
    top = _top(matcher, line)
    assert top.signature.role.value == "symptom"
    assert top.signature.confidence <= 0.35


def test_ucx_s_cq_creation_enomem_without_the_advice_is_still_the_memlock_signature(
    matcher: Matcher,
) -> None:
    # github.com/openucx/ucx/issues/8229 (UCX 1.12, before the locked-memory advice was added)
    line = (
        "[1652739463.054681] [cn0022:4071024:0]        ib_iface.c:1035 UCX  ERROR"
        " ibv_create_cq(cqe=4096) failed: Cannot allocate memory"
    )
    top = _top(matcher, line)
    assert top.signature.id == "infiniband.ucx_create_cq_enomem"
