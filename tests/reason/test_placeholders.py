"""Next steps read as sentences: what the evidence knows is filled in, the rest left out."""

from __future__ import annotations

import pytest

from denpex.reason.root_causes import fill
from tests.conftest import REPO, diagnose_paths

# Templates as the signature library and taxonomy.yaml write them.
STEPS = [
    (
        "Check df -h /dev/shm and ls /dev/shm on {host}; give the container more shared memory.",
        "Check df -h /dev/shm and ls /dev/shm; give the container more shared memory.",
    ),
    (
        "Read the traceback of {exception} on rank {rank} ({host}) and fix the code.",
        "Read the traceback of TypeError on rank 1 and fix the code.",
    ),
    (
        "Check whether a peer process was stopped (py-spy dump --pid) before the {timeout_ms} "
        "ms timeout.",
        "Check whether a peer process was stopped (py-spy dump --pid) before the timeout.",
    ),
    (
        "On {host}, check ldconfig -p | grep libcuda.",
        "Check ldconfig -p | grep libcuda.",
    ),
    (
        "NCCL could not create its shared-memory segment in /dev/shm ({bytes} bytes)",
        "NCCL could not create its shared-memory segment in /dev/shm",
    ),
    (
        'Drain {host}: scontrol update NodeName={host} State=DRAIN Reason="{failure_class}"',
        'Drain the failing host: scontrol update NodeName=<host> State=DRAIN Reason="xid"',
    ),
    (
        "Read the OOM message on rank {rank}; call torch.cuda.synchronize() first.",
        "Read the OOM message on the failing rank; call torch.cuda.synchronize() first.",
    ),
]


@pytest.mark.parametrize(("template", "expected"), STEPS)
def test_unknown_values_are_left_out_of_the_sentence(template: str, expected: str) -> None:
    known = {"exception": "TypeError", "failure_class": "xid"}
    if "rank 1" in expected:
        known["rank"] = "1"
    assert fill(template, known) == expected


def test_a_collective_timeout_whose_lines_do_not_say_the_timeout_leaves_it_out() -> None:
    case = REPO / "evals" / "corpus" / "inject-collective-timeout-stuck-rank"
    causes = diagnose_paths([str(case)]).root_causes
    steps = " ".join(step for cause in causes for step in cause.next_steps)
    assert "<timeout_ms>" not in steps and "<" not in steps
    assert "stuck (py-spy dump --pid) before the timeout." in steps
