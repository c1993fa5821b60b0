"""A collective that times out after the trainer said its loop was over was issued by code not
every rank runs: the ranks disagree on what follows the loop (a suspected collective mismatch,
named on the rank left waiting). Without the announcement, or with a failure between the two,
the timeout reads as before."""

from __future__ import annotations

from pathlib import Path

from denpex.models import Diagnosis, Status
from tests.conftest import diagnose_paths, write_job

# Real lines (public issue alan-turing-institute/autocast#381, the poster's abridged excerpt):
# a Lightning run on 4 GPUs under Slurm hung 30 minutes after its last epoch, because only rank
# 0 entered the barrier inside save_checkpoint (fixed in the linked PR).
FINISHED = "`Trainer.fit` stopped: `max_epochs=N` reached.\n"
TIMEOUT = """\
[Rank 0] Watchdog caught collective operation timeout:
  WorkNCCL(..., OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000)
  ran for 1800090 milliseconds before timing out.
...
srun: error: ... Aborted (core dumped)
"""
# Real line (public issue EleutherAI/lm-evaluation-harness#1804).
OOM = (
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 128.00 MiB. GPU 0 has a "
    "total capacty of 79.35 GiB of which 23.19 MiB is free. Process 178649 has 79.32 GiB memory "
    "in use.\n"
)


def _diagnose(tmp_path: Path, text: str) -> Diagnosis:
    return diagnose_paths([str(write_job(tmp_path, {"train.log": text}))])


def test_a_timeout_after_the_loop_finished_is_a_suspected_mismatch_on_the_rank_left_waiting(
    tmp_path: Path,
) -> None:
    diagnosis = _diagnose(tmp_path, FINISHED + TIMEOUT)
    top = diagnosis.root_causes[0]
    assert top.failure_class == "collective_mismatch"
    assert top.signature_id == "training.loop_finished"
    assert top.originating_rank == 0
    assert top.rank_finding is not None and top.rank_finding.mechanism == "first_divergence"
    # Read from the order of the lines alone: a suspicion, not a settled diagnosis.
    assert diagnosis.status is Status.unknown


def test_the_same_timeout_without_the_announcement_is_the_timeout(tmp_path: Path) -> None:
    top = _diagnose(tmp_path, TIMEOUT).root_causes[0]
    assert top.failure_class == "collective_timeout"


def test_the_announcement_alone_is_a_healthy_end(tmp_path: Path) -> None:
    assert _diagnose(tmp_path, FINISHED).status is Status.no_failure


def test_a_failure_between_the_end_and_the_timeout_is_what_the_others_waited_for(
    tmp_path: Path,
) -> None:
    top = _diagnose(tmp_path, FINISHED + OOM + TIMEOUT).root_causes[0]
    assert top.failure_class == "device_oom"
