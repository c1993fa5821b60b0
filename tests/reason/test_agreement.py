"""What every process must print alike: a difference between processes is the finding.

The lines are NCCL's own INFO output as posted in public threads (NVIDIA/nccl#147, #690) and
rendered from NCCL's INFO formats; each process's output is its own file, as a job leaves it.
"""

from __future__ import annotations

from pathlib import Path

from denpex.models import Diagnosis, Status
from tests.conftest import diagnose_paths, write_job

BROADCAST = (
    "learnfair062:{pid}:{pid} [{dev}] NCCL INFO Broadcast: opCount 0 sendbuff 0x7f3bfe7f5400 "
    "recvbuff 0x7f3bfe7f5400 count {count} datatype {dtype} op 0 root 0 comm 0x7f3bf405a260 "
    "[nranks=4] stream 0x55d5ffb73110"
)


def _traces(tmp_path: Path, calls: dict[int, tuple[int, int]]) -> list[str]:
    files = {
        f"LOG1.{dev}.txt": BROADCAST.format(pid=32615 + 2 * dev, dev=dev, count=count, dtype=dtype)
        + "\n"
        for dev, (count, dtype) in calls.items()
    }
    root = write_job(tmp_path, files)
    return [str(root / name) for name in files]


def test_the_one_process_whose_collective_differs_at_an_opcount_is_where_it_diverged(
    tmp_path: Path,
) -> None:
    calls = {0: (25503912, 6), 1: (53, 4), 2: (53, 4), 3: (53, 4)}
    diagnosis = diagnose_paths(_traces(tmp_path, calls))
    top = diagnosis.root_causes[0]
    assert diagnosis.status is not Status.no_failure
    assert top.failure_class == "collective_mismatch"
    assert top.originating_host == "learnfair062"
    assert "count 25503912" in top.evidence[0].text  # the odd call comes first


def test_processes_that_agree_are_no_finding(tmp_path: Path) -> None:
    calls = {dev: (53, 4) for dev in range(4)}
    assert diagnose_paths(_traces(tmp_path, calls)).status is Status.no_failure


def test_two_sides_choosing_different_networks_are_a_configuration_error_with_no_origin(
    tmp_path: Path,
) -> None:
    root = write_job(
        tmp_path,
        {
            "client.log": "x1:870114:870114 [1] NCCL INFO Using network IB\n",
            "server.log": "x0:26431:26431 [0] NCCL INFO Using network Socket\n",
        },
    )
    top = diagnose_paths([str(root / "client.log"), str(root / "server.log")]).root_causes[0]
    assert top.failure_class == "network_config_error"
    assert top.originating_rank is None and top.originating_host is None


def test_one_network_everywhere_is_no_finding(tmp_path: Path) -> None:
    files = {
        f"node{n}.log": f"node{n}:100{n}:100{n} [0] NCCL INFO Using network IB\n" for n in range(3)
    }
    root = write_job(tmp_path, files)
    assert diagnose_paths([str(root / n) for n in files]).status is Status.no_failure


# Real output (public issue Lightning-AI/pytorch-lightning#4389): `srun` started one task per node
# on 2 nodes x 4 GPUs and Lightning spawned local ranks 1-3 on each, so both nodes claimed global
# ranks 0-3 of 8 and ranks 4-7 were never started.
SAME_RANKS_TWICE = Path(__file__).parent / "fixtures" / "lightning-4389-two-nodes-same-ranks.log"
CLAIM = "initializing ddp: GLOBAL_RANK: {rank}, MEMBER: {member}/8\n"


def _agreement_findings(diagnosis: Diagnosis) -> list[str]:
    """The causes that a difference between the claims would give. (A log that ends on the
    claims is also suspected of stopping while the group formed: tests/reason/test_setup_stall.)"""
    return [
        c.failure_class for c in diagnosis.root_causes if c.signature_id != "silent.setup.stalled"
    ]


def test_a_global_rank_claimed_twice_with_others_unclaimed_is_a_launch_error() -> None:
    diagnosis = diagnose_paths([str(SAME_RANKS_TWICE)])
    top = diagnosis.root_causes[0]
    assert top.failure_class == "launch_config_error"
    assert top.originating_rank is None  # the launch is at fault, not a process
    assert top.rank_finding is not None and top.rank_finding.mechanism == "undetermined"
    assert "never claimed" in top.rank_finding.evidence


# Real output (public issue NVIDIA/NeMo#5819): two Slurm tasks (`0:`, `1:`), one per node, each
# claim global ranks 1-3 of 8; an excerpt, so fewer claims than the job's size are in the input.
TWO_TASKS_SAME_RANKS = Path(__file__).parent / "fixtures" / "nemo-5819-two-tasks-same-ranks.log"


def test_the_same_rank_claimed_by_two_tasks_is_a_launch_error_even_in_an_excerpt() -> None:
    top = diagnose_paths([str(TWO_TASKS_SAME_RANKS)]).root_causes[0]
    assert top.failure_class == "launch_config_error"
    assert top.originating_rank is None


def test_an_excerpt_of_one_process_claiming_again_is_no_finding(tmp_path: Path) -> None:
    # Fewer claims than the job's size, each value twice, all from one process: a restart's
    # excerpt, not two processes taking one identity.
    claims = "".join(CLAIM.format(rank=r, member=r + 1) for r in (1, 2, 3))
    path = write_job(tmp_path, {"job.log": claims + claims}) / "job.log"
    assert _agreement_findings(diagnose_paths([str(path)])) == []


def test_every_rank_claimed_once_or_a_whole_restart_is_no_finding(tmp_path: Path) -> None:
    once = "".join(CLAIM.format(rank=r, member=r + 1) for r in range(8))
    restarted = once + once  # a restarted job claims every rank again
    for name, text in {"once.log": once, "restarted.log": restarted}.items():
        path = write_job(tmp_path, {name: text}) / name
        assert _agreement_findings(diagnose_paths([str(path)])) == [], name
