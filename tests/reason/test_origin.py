"""The originating rank when no root-cause line names it, on real multi-process runs.

The jobs are evals/corpus/inject-ranks-*: real Gloo runs of evals/inject/rank_jobs.py, each with
one fault injected into one rank and labelled from the injection. A test that removes or adds
lines composes real lines: the kernel's OOM report is rendered from the kernel's format string
(mm/oom_kill.c) for the pid the run's launcher reported.
"""

from __future__ import annotations

import json
from pathlib import Path

from denpex.hybrid.fuse import is_partial, load_cues
from denpex.models import RankBasis, RootCause
from tests.conftest import REPO, diagnose_paths, write_job

CORPUS = REPO / "evals" / "corpus"
FIXTURES = Path(__file__).parent / "fixtures"


def _top(paths: list[Path]) -> RootCause:
    return diagnose_paths([str(p) for p in paths]).root_causes[0]


def _case(name: str) -> list[Path]:
    case = CORPUS / name
    return [p for p in sorted(case.rglob("*")) if p.is_file() and p.name != "expected.json"]


def _label(name: str) -> dict:
    return json.loads((CORPUS / name / "expected.json").read_text())


def test_the_rank_whose_collective_differs_is_the_odd_one_out() -> None:
    name = "inject-ranks-broadcast-instead-of-allreduce"
    top = _top(_case(name))
    assert top.originating_rank == _label(name)["originating_rank"] == 1
    assert top.failure_class == "collective_mismatch"  # peers wait in all_reduce, it broadcasts
    assert top.rank_finding is not None
    assert top.rank_finding.mechanism == "odd_one_out"
    assert top.rank_finding.basis is RankBasis.inferred
    assert "broadcast" in top.rank_finding.evidence and "all_reduce" in top.rank_finding.evidence
    assert top.rank_finding.caveat  # the finding says what it does not prove


def test_the_rank_absent_from_the_peers_reports_against_the_stated_world_size() -> None:
    # worker.<pid>.log names no rank; ranks 0, 2, 3 report a closed connection; the logs say
    # "world size 4"
    name = "inject-ranks-plain-launcher-sigkill-pid"
    top = _top(_case(name))
    assert top.originating_rank == _label(name)["originating_rank"] == 1
    assert top.rank_finding is not None
    assert top.rank_finding.mechanism == "absent_from_symptoms"
    assert "world size 4" in top.rank_finding.evidence


def test_without_a_stated_world_size_the_same_inference_is_thinner(tmp_path: Path) -> None:
    name = "inject-ranks-dataset-scan-absent"
    stated = _top(_case(name))
    text = (CORPUS / name / "launcher.log").read_text()
    unstated = "".join(line for line in text.splitlines(True) if "world size" not in line)
    thin = _top([write_job(tmp_path, {"launcher.log": unstated}) / "launcher.log"])
    assert stated.originating_rank == thin.originating_rank == 0
    assert thin.rank_finding is not None and stated.rank_finding is not None
    assert "world size 4" in stated.rank_finding.evidence
    assert thin.confidence < stated.confidence


def test_when_several_ranks_remain_the_answer_lists_them_and_why() -> None:
    # torch.multiprocessing prints the ranks' lines without a rank; only rank 0's failure is
    # reported, so ranks 1-3 (rank 2 was stopped) remain possible.
    name = "inject-ranks-mp-sigstop-progress"
    top = _top(_case(name))
    assert top.originating_rank is None
    assert _label(name)["originating_rank"] in top.candidate_ranks
    assert top.candidate_ranks == [1, 2, 3]
    assert "world size 4" in top.candidate_reason


def test_a_kernel_kill_of_a_pid_is_joined_to_the_rank_the_launcher_gave_that_pid(
    tmp_path: Path,
) -> None:
    name = "inject-ranks-two-node-sigkill"
    node1 = (CORPUS / name / "node1" / "torchrun.log").read_text()
    # mm/oom_kill.c: "Out of memory: Killed process %d (%s) total-vm:%lukB, anon-rss:%lukB, ..."
    oom = (
        "[Tue Dec  1 15:32:25 2026] Out of memory: Killed process 29250 (python) "
        "total-vm:3645188kB, anon-rss:2012344kB, file-rss:65536kB, shmem-rss:0kB, UID:0 "
        "pgtables:4512kB oom_score_adj:0\n"
    )
    job = write_job(tmp_path, {"node1/torchrun.log": node1, "node1/dmesg.log": oom})
    top = _top([job])
    assert top.failure_class == "host_oom"
    assert top.originating_rank == 3  # torchrun: rank 3 (local_rank: 1), pid 29250
    assert top.rank_finding is not None
    assert top.rank_finding.mechanism == "pid_join"
    assert top.rank_finding.basis is RankBasis.launcher


# Real lines (public issue bghira/SimpleTuner#304): an accelerate launch on 2 GPUs; the error
# names no rank, torch's elastic agent reports local rank 1 failing with exit code 1 and stops
# the other worker with SIGTERM.
_NAN_WITHOUT_RANK = (FIXTURES / "simpletuner-304-nan-no-rank.log").read_text()


def test_an_error_naming_no_rank_is_placed_on_the_one_worker_the_launcher_saw_fail(
    tmp_path: Path,
) -> None:
    top = _top([write_job(tmp_path, {"train.log": _NAN_WITHOUT_RANK}) / "train.log"])
    assert top.failure_class == "nan_or_inf"
    assert top.originating_rank == 1
    assert top.rank_finding is not None
    assert top.rank_finding.mechanism == "launcher_report"
    assert top.rank_finding.caveat  # the error line itself names no rank


def test_two_workers_failing_on_their_own_leave_the_error_unplaced(tmp_path: Path) -> None:
    both = _NAN_WITHOUT_RANK.replace(
        "[WARNING] Sending process 2701 closing signal SIGTERM",
        "[ERROR] failed (exitcode: 1) local_rank: 0 (pid: 2701) of binary: "
        "/root/miniconda3/bin/python",
    )
    top = _top([write_job(tmp_path, {"train.log": both}) / "train.log"])
    assert top.failure_class == "nan_or_inf"
    assert top.originating_rank is None


# Real lines (public issue IGNF/myria3d#123, 3 Slurm tasks): ranks 1 and 2 time out in the first
# all-reduce while rank 0, which prints no line with its rank, is still preparing the test set.
_TWO_OF_THREE_TIME_OUT = (FIXTURES / "myria3d-123-two-of-three-time-out.log").read_text()


def test_a_rank_implied_by_a_higher_one_is_possible_but_never_named(tmp_path: Path) -> None:
    top = _top([write_job(tmp_path, {"job.log": _TWO_OF_THREE_TIME_OUT}) / "job.log"])
    assert top.failure_class == "collective_timeout"
    assert top.originating_rank is None  # the excerpt may simply not show rank 0's timeout
    assert top.candidate_ranks == [0]
    assert "ranks count from 0" in top.candidate_reason


def test_a_job_of_one_process_failed_in_rank_0(tmp_path: Path) -> None:
    # Real lines (public issue lifeiteng/vall-e#27): the trainer states world_size=1.
    top = _top([FIXTURES / "vall-e-27-one-process.log"])
    assert top.failure_class == "loss_scale_underflow"
    assert top.originating_rank == 0
    assert top.rank_finding is not None and top.rank_finding.mechanism == "single_process"
    assert "world size 1" in top.rank_finding.evidence


def test_ranks_stuck_at_one_seqnum_in_different_calls_are_a_mismatch_with_no_side_named() -> None:
    # Real lines (public issue modelscope/FunASR#2317): at SeqNum 3437 rank 0 all-reduces
    # 4,311,252 elements and rank 1 one element (it had left the training loop).
    top = _top([FIXTURES / "funasr-2317-two-calls-at-one-seqnum.log"])
    assert top.failure_class == "collective_mismatch"
    assert top.originating_rank is None
    assert top.candidate_ranks == [0, 1]
    assert "4311252" in top.candidate_reason and "SeqNum 3437" in top.candidate_reason
    # The mismatch is read from the ranks' records, not guessed from who went quiet: the best
    # effort must not treat it as a symptom-only reading it may outweigh.
    assert top.title.startswith("Collectives differ: at SeqNum 3437")
    assert not is_partial(top, load_cues())


def test_ranks_stuck_at_crossed_seqnums_in_different_calls_are_a_mismatch() -> None:
    # Real lines (public issue huggingface/accelerate#3250, FSDP on two GPUs): rank 0 waits in a
    # reduce-scatter at SeqNum 122 while rank 1, which finished 122-125, waits in an all-gather at
    # 126. Over one group that only happens when the ranks paired different calls.
    top = _top([FIXTURES / "accelerate-3250-ranks-crossed-sequences.log"])
    assert top.failure_class == "collective_mismatch"
    assert top.originating_rank is None
    assert top.candidate_ranks == [0, 1]
    assert "SeqNum 122 in _REDUCE_SCATTER_BASE" in top.candidate_reason
    assert "SeqNum 126 in _ALLGATHER_BASE" in top.candidate_reason


def test_with_a_tie_neither_half_is_behind_whichever_printed_first(tmp_path: Path) -> None:
    lines = (FIXTURES / "accelerate-3250-ranks-crossed-sequences.log").read_text().splitlines()
    rank1_first = [x for x in lines if x.startswith("[rank1]")] + [
        x for x in lines if not x.startswith("[rank1]")
    ]
    job = write_job(tmp_path, {"post.log": "\n".join(rank1_first) + "\n"})
    top = _top([job / "post.log"])
    assert top.failure_class == "collective_mismatch"
    assert top.originating_rank is None


def test_one_rank_behind_a_majority_at_one_seqnum_is_still_the_one_behind(tmp_path: Path) -> None:
    timeout = (
        "[rank{r}]:[E1122 06:40:0{r}.504052851 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog "
        "caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, "
        "NumelIn=106343680, NumelOut=53171840, Timeout(ms)=600000) ran for 600080 milliseconds "
        "before timing out.\n"
    )
    text = timeout.format(r=0, seq=122, op="_REDUCE_SCATTER_BASE") + "".join(
        timeout.format(r=r, seq=126, op="_ALLGATHER_BASE") for r in (1, 2, 3)
    )
    job = write_job(tmp_path, {"post.log": text})
    top = _top([job / "post.log"])
    assert top.originating_rank == 0
    assert top.rank_finding is not None and top.rank_finding.mechanism == "seq_behind"


# Real lines (public issue axolotl-ai-cloud/axolotl#1698): DeepSpeed ZeRO-3 with CPU offload
# fails on rank 1 with a device mismatch in the optimizer step; rank 3's traceback through the
# same script follows, cut before its exception line.
_SECOND_TRACEBACK_CUT = (FIXTURES / "axolotl-1698-second-traceback-cut.log").read_text()


def test_a_fault_every_rank_runs_is_not_pinned_on_one_rank_while_another_traceback_is_cut(
    tmp_path: Path,
) -> None:
    top = _top([write_job(tmp_path, {"train.log": _SECOND_TRACEBACK_CUT}) / "train.log"])
    assert top.failure_class == "shape_or_dtype_error"
    assert top.originating_rank is None
    assert top.candidate_ranks == [1, 3]
    assert "rank(s) 3 printed a traceback whose exception is not in the input" in (
        top.candidate_reason
    )


def test_another_rank_whose_traceback_ends_in_a_lost_peer_is_a_cascade(tmp_path: Path) -> None:
    # Rank 3's traceback now ends the way a surviving Gloo rank's does (a real line of
    # evals/corpus/inject-dataloader-worker-corrupt-sample): it says how rank 3 failed.
    cascade = _SECOND_TRACEBACK_CUT.rstrip("\n") + (
        "\n[rank3]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/"
        "pair.cc:553] Connection closed by peer [127.0.0.1]:19889\n"
    )
    top = _top([write_job(tmp_path, {"train.log": cascade}) / "train.log"])
    assert top.failure_class == "shape_or_dtype_error"
    assert top.originating_rank == 1


def test_an_unknown_exception_raised_inside_a_collective_names_no_rank() -> None:
    # Real lines (public issue vllm-project/vllm-ascend#486): rank 1's all_reduce fails with an
    # HCCL error code whose class no signature settles (torch_npu's catalog gives it a low
    # prior); the excerpt begins inside the traceback.
    top = _top([FIXTURES / "vllm-ascend-486-unknown-error-in-all-reduce.log"])
    assert top.originating_rank is None
    assert top.candidate_ranks == [1]
    assert "inside all_reduce" in top.candidate_reason
    assert "may have begun on a peer" in top.candidate_reason


def test_a_traceback_cut_before_its_exception_names_no_rank() -> None:
    # Real lines (public issue ROCm/aws-ofi-rccl#16): rank 14's traceback through DDP's set-up,
    # cut before the exception line.
    top = _top([FIXTURES / "aws-ofi-rccl-16-traceback-cut.log"])
    assert top.originating_rank is None
    assert top.candidate_ranks == [14]
    assert "exception is not in the input" in top.candidate_reason


def test_a_failure_no_class_fits_leaves_the_rank_that_printed_it_a_candidate() -> None:
    # Real lines (public issue pytorch/pytorch#137145): rank 0's SymmetricMemory rendezvous
    # fails with "CUDA driver error: out of memory", which no class fits (the thread found an
    # overflow in the size every rank computes alike); only rank 0's output is pasted.
    top = _top([FIXTURES / "pytorch-137145-unknown-driver-error.log"])
    assert top.failure_class == "unknown"
    assert top.originating_rank is None
    assert top.candidate_ranks == [0]
    assert "no class fits" in top.candidate_reason


# Real lines (public issue pytorch/pytorch#134006, torch 2.4 under srun): rank 4's torchrun
# reports it exited with code 1 at 11:37:36; rank 0's all-gather on a subgroup times out ten
# minutes later; ranks 1-3 printed nothing.
DIED_FIRST = """\
Root Cause (first observed failure):
[0]:
  time      : 2024-08-20_11:37:36
  host      : workergpu008.cm.cluster
  rank      : 4 (local_rank: 0)
  exitcode  : 1 (pid: 793062)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
srun: error: workergpu008: task 1: Exited with exit code 1
[rank0]:[E820 11:47:24.069865760 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective \
operation timeout: WorkNCCL(SeqNum=2, OpType=_ALLGATHER_BASE, NumelIn=1, NumelOut=2, \
Timeout(ms)=600000) ran for 600001 milliseconds before timing out.
"""


def test_the_one_rank_recorded_dead_before_its_peers_reported_is_where_it_began(
    tmp_path: Path,
) -> None:
    top = _top([write_job(tmp_path, {"job.log": DIED_FIRST}) / "job.log"])
    assert top.originating_rank == 4
    assert top.rank_finding is not None
    assert top.rank_finding.mechanism == "died_before_reports"
    assert "exited with code 1" in top.rank_finding.evidence


def test_a_rank_that_died_after_its_peers_reported_is_their_cascade(tmp_path: Path) -> None:
    # The same record, stamped after the timeout: the launcher tore it down once rank 0 failed.
    late = DIED_FIRST.replace("2024-08-20_11:37:36", "2024-08-20_11:48:00")
    top = _top([write_job(tmp_path, {"job.log": late}) / "job.log"])
    assert top.originating_rank is None


# Real line (public issue pytorch/pytorch#76198): the only output of the job, rank 1's.
_LOST_RANK_0 = (FIXTURES / "pytorch-76198-lost-rank-0.log").read_text()


def test_one_rank_reporting_a_lost_peer_leaves_a_candidate_not_a_confident_culprit(
    tmp_path: Path,
) -> None:
    # One witness, the job's size unknown: rank 0 is implied by rank 1's number, not shown to
    # have stopped, and the lone line is the inference's evidence, not a second witness to it.
    top = _top([write_job(tmp_path, {"rank1.log": _LOST_RANK_0}) / "rank1.log"])
    assert top.failure_class == "collective_timeout"
    assert top.originating_rank is None
    assert top.candidate_ranks == [0]
    assert top.confidence < 0.6  # below the gate: the rules do not settle it


def test_two_ranks_timing_out_alike_corroborate_the_stall_more_than_one(tmp_path: Path) -> None:
    two = _top([write_job(tmp_path / "two", {"job.log": _TWO_OF_THREE_TIME_OUT}) / "job.log"])
    first_only = _TWO_OF_THREE_TIME_OUT.splitlines(True)[0]
    one = _top([write_job(tmp_path / "one", {"job.log": first_only}) / "job.log"])
    assert two.failure_class == one.failure_class == "collective_timeout"
    assert one.confidence < two.confidence


def test_a_fault_every_rank_runs_alike_is_placed_on_the_one_process_of_a_one_process_job() -> None:
    # Real lines (public issue deepspeedai/DeepSpeed#3869): DeepSpeed's launcher states
    # dist_world_size=1, then the process runs out of GPU memory. No other rank exists to have
    # met the same fault, so the rank is named, not left a candidate.
    top = _top([FIXTURES / "deepspeed-3869-one-process-oom.log"])
    assert top.failure_class == "device_oom"
    assert top.originating_rank == 0
    assert top.candidate_ranks == []
