"""The distinctions the reasoning must draw, each on real text.

Lines come from real programs: the rank logs of examples/torchrun-bad-sample (a real Gloo run),
the Slurm and NVIDIA driver lines in the form their sources print them (see rules/*/ references).
Composing real lines into one job is how a multi-host failure looks once its logs are gathered.
"""

from __future__ import annotations

from pathlib import Path

from denpex.models import Status
from tests.conftest import BAD_SAMPLE, diagnose_paths, write_job

RANK3 = next(BAD_SAMPLE.glob("logs/*/attempt_0/3/stderr.log")).read_text()
RANK0 = next(BAD_SAMPLE.glob("logs/*/attempt_0/0/stderr.log")).read_text()
# The example's failure happens between 06:34:26 and 06:34:28 on 2026-11-30.
PREEMPTED = (
    "slurmstepd: error: *** STEP 4242.0 ON gpu-017 CANCELLED AT 2026-11-30T06:34:26 "
    "DUE TO PREEMPTION ***\n"
)
# PyTorch's excepthook prefix and CUDA error wording, as a rank on a GPU that just fell off the
# bus prints them (rules/cuda/unspecified_launch_failure.yaml).
CUDA_LAUNCH_FAILURE = "[rank3]: RuntimeError: CUDA error: unspecified launch failure\n"
XID_79 = (
    "Nov 30 06:34:25 gpu-017 kernel: NVRM: Xid (PCI:0000:86:00): 79, pid='<unknown>', "
    "name=<unknown>, GPU has fallen off the bus.\n"
)


def test_scheduler_preemption_outranks_the_errors_it_causes(tmp_path: Path) -> None:
    job = write_job(tmp_path, {"slurm-4242.out": PREEMPTED, "rank3.log": RANK3, "rank0.log": RANK0})
    diagnosis = diagnose_paths([str(job)])
    top = diagnosis.root_causes[0]
    assert top.failure_class == "preemption"
    assert top.originating_rank is None  # the whole job was preempted, no rank began it
    # the peers' errors after the preemption are its cascade
    assert "gloo.connection_closed_by_peer" in top.explains.signature_ids
    # rank 3's bad sample is not something a preemption causes: it stays, ranked below
    assert "data_preprocessing_error" in [r.failure_class for r in diagnosis.root_causes[1:]]


def test_a_crash_long_before_the_scheduler_acted_stays_the_cause(tmp_path: Path) -> None:
    later = PREEMPTED.replace("06:34:26", "06:49:26")
    job = write_job(tmp_path, {"slurm-4242.out": later, "rank3.log": RANK3, "rank0.log": RANK0})
    top = diagnose_paths([str(job)]).root_causes[0]
    assert top.failure_class == "data_preprocessing_error"
    assert top.originating_rank == 3


def test_a_gpu_that_fell_off_the_bus_explains_its_hosts_errors(tmp_path: Path) -> None:
    job = write_job(
        tmp_path,
        {
            "gpu-017/kern.log": XID_79,
            "gpu-017/rank3.log": CUDA_LAUNCH_FAILURE,
            "gpu-003/rank0.log": RANK0,
        },
    )
    diagnosis = diagnose_paths([str(job)])
    top = diagnosis.root_causes[0]
    assert top.failure_class == "gpu_fell_off_bus"
    assert top.category == "hardware"
    assert top.owner == "infrastructure"
    assert top.originating_host == "gpu-017"
    assert any("scontrol update NodeName=gpu-017 State=DRAIN" in s for s in top.next_steps)
    # rank 3's CUDA error on the same host is a consequence, not a competing root cause
    assert "cuda.unspecified_launch_failure" in top.explains.signature_ids
    assert [r.failure_class for r in diagnosis.root_causes] == ["gpu_fell_off_bus"]


def test_an_error_on_another_host_is_not_absorbed_by_the_hardware_fault(tmp_path: Path) -> None:
    job = write_job(
        tmp_path, {"gpu-017/kern.log": XID_79, "gpu-003/rank3.log": CUDA_LAUNCH_FAILURE}
    )
    classes = [r.failure_class for r in diagnose_paths([str(job)]).root_causes]
    assert "gpu_fell_off_bus" in classes
    assert "illegal_memory_access" in classes


def test_confidences_of_ranked_alternatives_never_sum_above_one(tmp_path: Path) -> None:
    job = write_job(tmp_path, {"slurm-4242.out": PREEMPTED, "rank3.log": RANK3, "rank0.log": RANK0})
    diagnosis = diagnose_paths([str(job)])
    assert diagnosis.status is Status.confident
    assert sum(r.confidence for r in diagnosis.root_causes) <= 1.0 + 1e-9


# github.com/ultralytics/yolov5/issues/12811 (SageMaker, 4 nodes): NCCL dialled a link-local
# address, then traced the failure up its stack.
NCCL_LINK_LOCAL = (
    "ip-10-0-225-125:17:52 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to "
    "169.254.255.18<42219> failed : Software caused connection abort\n"
    "ip-10-0-225-125:17:52 [0] NCCL INFO misc/socket.cc:565 -> 2\n"
    "ip-10-0-225-125:17:52 [0] NCCL INFO misc/socket.cc:587 -> 2\n"
    "ip-10-0-225-125:17:52 [0] NCCL INFO transport/net_socket.cc:338 -> 2\n"
    "ip-10-0-225-125:17:52 [0] NCCL INFO transport/net.cc:677 -> 2\n"
)


def test_no_alternative_is_more_confident_than_the_top_answer(tmp_path: Path) -> None:
    # A weak top answer leaves much unsaid; an alternative ranked below it gets no more of that
    # than the top has (the best effort reads these confidences as the rules' support).
    job = write_job(tmp_path, {"rank0.log": NCCL_LINK_LOCAL})
    top, *alternatives = diagnose_paths([str(job)]).root_causes
    assert top.failure_class == "network_config_error"
    assert alternatives
    assert all(a.confidence <= top.confidence for a in alternatives)


def test_next_steps_are_routed_by_class(tmp_path: Path) -> None:
    job = write_job(tmp_path, {"rank3.log": RANK3})
    top = diagnose_paths([str(job)]).root_causes[0]
    assert (top.failure_class, top.owner) == ("data_preprocessing_error", "data")


# github.com/hpcaitech/Open-Sora/issues/815: rank 0's DataLoader lost a worker; torchrun then
# terminated the others. No record says why the worker died.
DATALOADER_WORKER_GONE = (
    "[rank0]: RuntimeError: DataLoader worker (pid(s) 8864) exited unexpectedly\n"
    "W0617 03:17:51.687000 140319081027392 torch/distributed/elastic/multiprocessing/api.py:858] "
    "Sending process 44 closing signal SIGTERM\n"
    "W0617 03:17:51.689000 140319081027392 torch/distributed/elastic/multiprocessing/api.py:858] "
    "Sending process 45 closing signal SIGTERM\n"
)


def test_a_symptom_of_the_process_itself_outranks_the_teardown_it_caused(tmp_path: Path) -> None:
    diagnosis = diagnose_paths([str(write_job(tmp_path, {"launcher.log": DATALOADER_WORKER_GONE}))])
    top = diagnosis.root_causes[0]
    assert top.failure_class == "dataloader_worker_died"
    assert top.originating_rank == 0
    assert diagnosis.status is not Status.confident


# github.com/modelscope/ms-swift/issues/3446: one rank's output of a DDP misuse every rank meets.
DDP_MARKED_TWICE = (
    "[rank0]: RuntimeError: Expected to mark a variable ready only once. This error is caused by "
    "one of the following reasons: 1) Use of a module parameter outside the `forward` function. "
    "Please ma\n"
)


def test_a_job_wide_fault_seen_on_one_rank_alone_is_not_placed_on_it(tmp_path: Path) -> None:
    top = diagnose_paths([str(write_job(tmp_path, {"post.log": DDP_MARKED_TWICE}))]).root_causes[0]
    assert top.failure_class == "ddp_usage_error"
    assert top.originating_rank is None


# Two ranks of one host (accelerate's "[rankN]:" prefix); rank 1's DataLoader worker hits the
# container's 64 MB /dev/shm first (torch/utils/data/_utils/signal_handling.py's wording).
SHM_ON_RANK1 = (
    "[rank0]: epoch 0 step 120 loss 2.31\n"
    "[rank1]: epoch 0 step 120 loss 2.29\n"
    "[rank1]: RuntimeError: DataLoader worker (pid 15045) is killed by signal: Bus error. It is "
    "possible that dataloader's workers are out of shared memory. Please try to raise your shared "
    "memory limit.\n"
)


def test_a_full_dev_shm_names_no_rank_but_keeps_the_hosts_ranks_as_candidates(
    tmp_path: Path,
) -> None:
    diagnosis = diagnose_paths([str(write_job(tmp_path, {"post.log": SHM_ON_RANK1}))])
    top = diagnosis.root_causes[0]
    assert top.failure_class == "shm_exhausted"
    assert top.originating_rank is None
    assert set(top.candidate_ranks) == {0, 1}
    assert "every process" in (top.candidate_reason or "")


# Real DeepSpeed fp16 lines (hiyouga/LLaMA-Factory#251): the scaler halves the loss scale on
# every overflow, then gives up at its minimum two minutes later.
FP16_OVERFLOWS = "".join(
    f"[2023-07-26 15:{minute}] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! "
    f"Rank 0 Skipping step. Attempted loss scale: {scale}, reducing to {scale // 2}\n"
    for minute, scale in (("17:17,349", 128), ("17:35,011", 64), ("17:52,790", 32))
)
LOSS_SCALE_AT_MINIMUM = (
    "[2023-07-26 15:19:24,960] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 45098\n"
    "Exception: Current loss scale already at minimum - cannot decrease scale anymore. "
    "Exiting run.\n"
)


def test_early_symptoms_of_the_same_failure_do_not_push_its_root_cause_down(
    tmp_path: Path,
) -> None:
    job = write_job(tmp_path, {"train.log": FP16_OVERFLOWS + LOSS_SCALE_AT_MINIMUM})
    diagnosis = diagnose_paths([str(job)])
    top = diagnosis.root_causes[0]
    assert diagnosis.status is Status.confident
    assert top.signature_id == "deepspeed.loss_scale_at_minimum"
    assert "deepspeed.overflow_skipping_step" in top.explains.signature_ids


# Real (NVIDIA/Megatron-LM#1877): a reshape every rank runs alike, printed here by rank 11.
SHAPE_ERROR = "[rank11]: RuntimeError: shape '[2048, 1, 4096]' is invalid for input of size 0\n"


def test_a_fault_every_rank_runs_alike_seen_on_the_only_rank_at_hand_names_no_rank(
    tmp_path: Path,
) -> None:
    job = write_job(tmp_path, {"post.log": SHAPE_ERROR})
    top = diagnose_paths([str(job)]).root_causes[0]
    assert top.failure_class == "shape_or_dtype_error"
    assert top.originating_rank is None
    assert top.candidate_ranks == [11]
    assert "only rank 11's output is in evidence" in top.candidate_reason


def test_the_same_fault_is_placed_on_its_rank_when_the_other_ranks_logs_are_there(
    tmp_path: Path,
) -> None:
    # Rank 0's log, from the same job, holds nothing abnormal: it did not meet the fault.
    job = write_job(tmp_path, {"rank11.log": SHAPE_ERROR, "rank0.log": "\n"})
    top = diagnose_paths([str(job)]).root_causes[0]
    assert top.originating_rank == 11


# Real lines (public issue visual-AI/3DRS#7): Slurm's record of the cancel, then of the OOM kill
# in the same step; the commenter confirmed host RAM ran out.
CANCELLED_AFTER_OOM = (
    "slurmstepd: error: *** JOB 10609057 ON g002 CANCELLED AT 2025-08-22T01:14:01 ***\n"
    "slurmstepd: error: Detected 1 oom_kill event in StepId=10609057.batch. Some of the step "
    "tasks have been OOM Killed.\n"
)


def test_a_cancel_beside_an_oom_kill_in_the_same_job_is_its_consequence(tmp_path: Path) -> None:
    diagnosis = diagnose_paths([str(write_job(tmp_path, {"slurm.out": CANCELLED_AFTER_OOM}))])
    assert [r.failure_class for r in diagnosis.root_causes] == ["host_oom"]
    assert diagnosis.status is Status.confident


# Real line (public issue NVIDIA/Megatron-LM#2597): Megatron's rerun state machine, in the
# release that spells it "invokation", found a NaN in rank 13's own gradients.
LOCAL_NAN = (
    "ERROR:megatron.core.rerun_state_machine:Unexpected result nan on rank 13 at iteration #2 "
    "invokation #1 (message='found NaN in local grad norm for bucket #0 in backward pass before "
    "data-parallel communication collective')\n"
)


def test_a_check_of_one_rank_s_own_gradients_names_that_rank_alone(tmp_path: Path) -> None:
    # nan_or_inf is a class every rank runs alike, so one rank's line alone would name no rank;
    # the signature states that its check is of the rank's local state.
    top = diagnose_paths([str(write_job(tmp_path, {"train.log": LOCAL_NAN}))]).root_causes[0]
    assert top.failure_class == "nan_or_inf"
    assert top.originating_rank == 13


# Real (deepspeedai/DeepSpeed#7568): c10d's desync check on rank 2, its peer rank 3 in another
# collective. A mismatch is between ranks; the one that reports it does not say which diverged.
MISMATCH_REPORTED_BY_ONE_RANK = (
    "[rank2]: RuntimeError: Detected mismatch between collectives on ranks. Rank 2 is"
    " running collective: CollectiveFingerPrint(SequenceNumber=32, OpType=ALLREDUCE, "
    "TensorShape=[], TensorDtypes=Float, TensorDeviceTypes=TensorOptions(dtype=float "
    "(default), device=cuda, layout=Strided (default), requires_grad=false (default),"
    " pinned_memory=false (default), memory_format=(nullopt))), but Rank 3 is running"
    " collective: CollectiveFingerPrint(SequenceNumber=0OpType=GATHER).Collectives di"
    "ffer in the following aspects:          Sequence number: 32vs 0  Op type: ALLRED"
    "UCEvs GATHER  Tensor Tensor dtypes: Floatvs   Tensor Tensor devices: TensorOptio"
    "ns(dtype=float (default), device=cuda, layout=Strided (default), requires_grad=f"
    "alse (default), pinned_memory=false (default), memory_format=(nullopt))vs \n"
)


def test_a_collective_mismatch_names_no_rank_from_the_rank_that_reports_it(tmp_path: Path) -> None:
    job = write_job(tmp_path, {"train.log": MISMATCH_REPORTED_BY_ONE_RANK})
    diagnosis = diagnose_paths([str(job)])
    top = diagnosis.root_causes[0]
    assert top.failure_class == "collective_mismatch"
    assert top.originating_rank is None
