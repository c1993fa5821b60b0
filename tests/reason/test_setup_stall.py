"""A log that stops while its ranks join the process group is a suspected rendezvous failure;
one that goes on past forming the group is not."""

from __future__ import annotations

from pathlib import Path

from denpex.models import Status
from tests.conftest import diagnose_paths, write_job

# Real lines: Lightning Fabric on 4 nodes x 8 GPUs under Slurm (public issue
# Lightning-AI/pytorch-lightning#17228), the run hung after these.
LIGHTNING_JOINING = """\
I0411 01:28:10.345465 140656298329920 github_fabric.py:15] 3: compute-permanent-node-[583,752,801,869]
INFO: Initializing distributed: GLOBAL_RANK: 6, MEMBER: 7/32
I0411 01:28:10.347674 140492815607616 github_fabric.py:15] 3: compute-permanent-node-[583,752,801,869]
INFO: Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/32
I0411 01:28:10.348870 140065187370816 github_fabric.py:15] 3: compute-permanent-node-[583,752,801,869]
INFO: Initializing distributed: GLOBAL_RANK: 4, MEMBER: 5/32
"""  # noqa: E501
# Real lines of PyTorch 1.x's store-based barrier completing (a fairseq run).
BARRIER = """\
2022-09-26 16:09:56 | INFO | torch.distributed.distributed_c10d | Added key: store_based_barrier_key:3 to store for rank: 0
2022-09-26 16:09:56 | INFO | torch.distributed.distributed_c10d | Rank 0: Completed store-based barrier for key:store_based_barrier_key:3 with 4 nodes.
"""  # noqa: E501
# Real lines: an accelerate launch with DeepSpeed that hung right after initialising the
# backend (public issue RLHFlow/Online-RLHF#11).
DEEPSPEED_JOINING = """\
[2024-06-11 00:23:36,254] [INFO] [comm.py:637:init_distributed] cdb=None
[2024-06-11 00:23:36,254] [INFO] [comm.py:668:init_distributed] Initializing TorchBackend in DeepSpeed with backend nccl
[2024-06-11 00:23:36,296] [INFO] [comm.py:637:init_distributed] cdb=None
"""  # noqa: E501
STEPS = "".join(
    f"{{'loss': {2.31 - i / 100:.4f}, 'grad_norm': 1.2, 'learning_rate': 5e-05, 'epoch': 0.0{i}}}\n"
    for i in range(1, 6)
)


def _diagnose(tmp_path: Path, text: str) -> object:
    job = write_job(tmp_path, {"train.log": text})
    return diagnose_paths([str(job / "train.log")])


def test_a_log_that_ends_with_ranks_joining_suspects_peers_that_were_never_launched(
    tmp_path: Path,
) -> None:
    # Peers that were started but cannot reach the master print their connection errors (the
    # retrying reading below); peers that print nothing at all were most often never started.
    diagnosis = _diagnose(tmp_path, LIGHTNING_JOINING)
    assert diagnosis.status is Status.unknown  # a suspicion, never confident
    top = diagnosis.root_causes[0]
    assert top.failure_class == "launch_config_error"
    assert top.confidence < 0.6
    assert top.originating_rank is None
    assert "3 of 32 ranks announced" in top.title
    assert "excerpt cut at this point looks the same" in top.caveat
    assert [e.line for e in top.evidence] == [2, 4, 6]


def test_the_announcement_of_one_rank_alone_is_enough_when_the_log_ends_there(
    tmp_path: Path,
) -> None:
    diagnosis = _diagnose(tmp_path, DEEPSPEED_JOINING)
    assert diagnosis.root_causes[0].failure_class == "launch_config_error"


def test_training_after_the_announcements_means_the_group_formed(tmp_path: Path) -> None:
    diagnosis = _diagnose(tmp_path, DEEPSPEED_JOINING + STEPS)
    assert diagnosis.status is Status.no_failure
    assert not [f for f in diagnosis.silent if f.detector.startswith("setup")]


def test_a_completed_barrier_means_the_group_formed(tmp_path: Path) -> None:
    diagnosis = _diagnose(tmp_path, BARRIER)
    assert diagnosis.status is Status.no_failure


def test_a_log_that_goes_on_past_the_announcements_is_not_read_as_stopped(
    tmp_path: Path,
) -> None:
    later = "".join(f"Loading checkpoint shards: {i}/20\n" for i in range(20))
    diagnosis = _diagnose(tmp_path, LIGHTNING_JOINING + later)
    assert diagnosis.status is Status.no_failure


# Real lines: GPT-NeoX under DeepSpeed's pdsh runner, whose job hung in its first step (public
# issue EleutherAI/gpt-neox#985).
NEOX_TRAINING = """\
gpt-neox-train-dist-master: time (ms) | model and optimizer: 49512.12 | train/valid/test data iterators: 1488.60
gpt-neox-train-dist-master: training ...
gpt-neox-train-dist-master: [2023-07-04 15:47:30,793] [INFO] [checkpointing.py:553:forward] Activation Checkpointing Information
gpt-neox-train-dist-master: [2023-07-04 15:47:30,793] [INFO] [checkpointing.py:560:forward] ----Synchronization True
"""  # noqa: E501


def test_a_log_that_stops_after_the_training_loop_began_is_a_suspected_first_step_hang(
    tmp_path: Path,
) -> None:
    diagnosis = _diagnose(tmp_path, NEOX_TRAINING)
    assert diagnosis.status is Status.unknown
    top = diagnosis.root_causes[0]
    assert (top.failure_class, top.originating_rank) == ("collective_timeout", None)
    assert top.confidence < 0.6
    assert "first training steps" in top.title
    assert [e.line for e in top.evidence] == [2]


def test_a_step_after_the_loop_began_means_it_did_not_stop_there(tmp_path: Path) -> None:
    diagnosis = _diagnose(tmp_path, NEOX_TRAINING + STEPS)
    assert diagnosis.status is Status.no_failure


# Real lines: a run that sometimes hangs at this point (public issue MCG-NJU/SparseOcc#40; the
# fix in the thread: rm -rf ~/.cache/torch_extensions).
EXTENSION_LOADING = """\
Using /home/gyh/.cache/torch_extensions/py38_cu118 as PyTorch extensions root...
Detected CUDA files, patching ldflags
Emitting ninja build file /home/gyh/.cache/torch_extensions/py38_cu118/dvr/build.ninja...
Building extension module dvr...
Allowing ninja to set a default number of workers... (overridable by setting the environment variable MAX_JOBS=N)
ninja: no work to do.
Loading extension module dvr...
"""  # noqa: E501
# Real lines: DeepSpeed's op builder loading its ops and going on (public issue
# OptimalScale/LMFlow#219).
EXTENSION_LOADED = """\
Loading extension module cpu_adam...
Time to load cpu_adam op: 2.640676498413086 seconds
"""


def test_a_log_that_ends_loading_a_jit_built_extension_is_a_suspected_stale_build_lock(
    tmp_path: Path,
) -> None:
    diagnosis = _diagnose(tmp_path, EXTENSION_LOADING)
    assert diagnosis.status is Status.unknown
    top = diagnosis.root_causes[0]
    assert top.failure_class == "dependency_error"
    assert top.confidence < 0.6
    assert "(dvr; nothing after)" in top.title
    assert "lock file" in top.caveat


def test_an_extension_that_loaded_is_no_finding(tmp_path: Path) -> None:
    assert _diagnose(tmp_path, EXTENSION_LOADED).status is Status.no_failure


# Real lines: SGLang serving DeepSeek-V3 over 4 nodes (TP 32); the launch stalled here (public
# issue sgl-project/sglang#3784).
SGLANG_LOADED = """\
[2025-02-22 08:19:45 TP26] Load weight begin. avail mem=78.38 GB
Cache shape torch.Size([163840, 64])
[2025-02-22 08:21:43 TP26] Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, avail mem=37.21 GB
[2025-02-22 08:21:43 TP29] Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, avail mem=37.21 GB
"""  # noqa: E501
# uvicorn's lines once vLLM's or SGLang's HTTP server is up.
SERVER_UP = """\
INFO:     Application startup complete.
INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)
"""


def test_a_log_that_stops_while_an_inference_engine_starts_is_a_suspected_first_collective_hang(
    tmp_path: Path,
) -> None:
    diagnosis = _diagnose(tmp_path, SGLANG_LOADED)
    assert diagnosis.status is Status.unknown
    top = diagnosis.root_causes[0]
    assert (top.failure_class, top.originating_rank) == ("collective_timeout", None)
    assert top.confidence < 0.6
    assert "inference engine starts" in top.title
    assert "first collectives" in top.caveat
    assert [e.line for e in top.evidence] == [3, 4]


def test_an_engine_that_says_it_is_up_did_not_stop_while_starting(tmp_path: Path) -> None:
    assert _diagnose(tmp_path, SGLANG_LOADED + SERVER_UP).status is Status.no_failure


# Real lines: NCCL 2.2x creating a communicator in a 4-node DDP job
# (evals/healthy/esm2-ddp-worker-0.log, a job that went on to train and succeeded).
NCCL_SETUP = """\
esm2-worker-0:53:267 [0] NCCL INFO TUNER/Plugin: Failed to find ncclTunerPlugin_v4 symbol.
esm2-worker-0:53:267 [0] NCCL INFO TUNER/Plugin: Failed to find ncclTunerPlugin_v2 symbol, using internal tuner instead.
esm2-worker-0:53:267 [0] NCCL INFO ncclCommInitRankConfig comm 0x36477e40 rank 3 nranks 4 cudaDev 0 nvmlDev 0 busId 1e0 commId 0x15c1c76db987339e - Init COMPLETE
"""  # noqa: E501
# Lines NCCL prints while it connects channels: what people paste, cut anywhere.
NCCL_CHANNELS = """\
esm2-worker-0:53:271 [0] NCCL INFO Channel 00/0 : 2[0] -> 3[0] [receive] via NET/Socket/0
esm2-worker-0:53:271 [0] NCCL INFO Connected all rings, use ring PXN 0 GDR 0
"""
# What the same job printed next: the Hugging Face Trainer's own lines.
TRAINER_STARTS = """\
[INFO|trainer.py:2128] 2025-04-24 20:44:49,943 >> ***** Running training *****
[INFO|trainer.py:2129] 2025-04-24 20:44:49,943 >>   Num examples = 100,000
"""


def test_a_log_that_stops_once_nccl_created_its_communicator_is_a_suspected_first_collective_hang(
    tmp_path: Path,
) -> None:
    diagnosis = _diagnose(tmp_path, NCCL_SETUP)
    assert diagnosis.status is Status.unknown
    top = diagnosis.root_causes[0]
    assert (top.failure_class, top.originating_rank) == ("collective_timeout", None)
    assert top.confidence < 0.6
    assert "communicators were created" in top.title
    assert "IOMMU or ACS" in top.caveat
    assert [e.line for e in top.evidence] == [3]


def test_the_programs_own_lines_after_nccls_set_up_mean_it_returned(tmp_path: Path) -> None:
    # Two lines are enough: once the first collective returns, the program speaks at once.
    assert _diagnose(tmp_path, NCCL_SETUP + TRAINER_STARTS).status is Status.no_failure
    assert _diagnose(tmp_path, NCCL_SETUP + NCCL_CHANNELS).status is Status.no_failure


def test_an_excerpt_of_nccls_channel_chatter_is_no_finding(tmp_path: Path) -> None:
    assert _diagnose(tmp_path, NCCL_CHANNELS).status is Status.no_failure


def test_a_suspected_hang_comes_before_abnormal_lines_that_name_nothing(tmp_path: Path) -> None:
    unexplained = "ERROR: could not read /etc/gpu-health/status: the node agent did not answer\n"
    diagnosis = _diagnose(tmp_path, unexplained + NCCL_SETUP)
    first, second = diagnosis.root_causes[:2]
    assert (first.failure_class, second.failure_class) == ("collective_timeout", "unknown")
    assert diagnosis.summary.startswith("Suspected silent failure: ")


# Real lines: rccl-tests on 2 x MI100 whose first all-reduce never returned: the host's IOMMU
# blocked peer-to-peer (public issue ROCm/rccl#1129).
TESTS_HEADER = """\
#   Rank  0 Pid  21284 on deep-visionscaper3 device  0 [0000:2f:00.0] AMD Instinct MI100
#   Rank  1 Pid  21284 on deep-visionscaper3 device  1 [0000:03:00.0] AMD Instinct MI100
#
#                                                              out-of-place                       in-place          
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
"""  # noqa: E501, W291
# What nccl-tests prints once a collective returns: a row per size, then its summary (real,
# a 16-GPU all-reduce; public pull request coreweave/nccl-tests#43).
TESTS_ROWS = """\
  2147483648     536870912     float     sum      -1   5589.1  384.22  757.78      0   5474.6  392.26  773.62      0
  4294967296    1073741824     float     sum      -1    10094  425.49  839.16      0    10141  423.54  835.32      0
  8589934592    2147483648     float     sum      -1    20299  423.16  834.57      0    20006  429.37  846.82      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 745.53 
"""  # noqa: E501, W291


def test_a_benchmark_that_stops_at_its_results_header_is_a_suspected_first_collective_hang(
    tmp_path: Path,
) -> None:
    diagnosis = _diagnose(tmp_path, TESTS_HEADER)
    assert diagnosis.status is Status.unknown
    top = diagnosis.root_causes[0]
    assert (top.failure_class, top.confidence < 0.6) == ("collective_timeout", True)
    assert [e.line for e in top.evidence] == [5]


def test_a_benchmark_that_printed_its_rows_did_not_stop_there(tmp_path: Path) -> None:
    assert _diagnose(tmp_path, TESTS_HEADER + TESTS_ROWS).status is Status.no_failure


# Real lines: PaddleOCR on two machines whose trainers never all listened (public issue
# PaddlePaddle/PaddleOCR#6455).
PADDLE_WAITING = """\
server not ready, wait 3 sec to retry...
not ready endpoints:['10.36.10.40:6070', '10.36.10.40:6071', '10.36.10.40:6072', '110.36.10.40:6073', '10.36.10.40:6072', '10.36.10.41:6073']
server not ready, wait 3 sec to retry...
"""  # noqa: E501


def test_a_paddle_trainer_that_ends_waiting_for_its_peers_is_a_suspected_rendezvous_failure(
    tmp_path: Path,
) -> None:
    diagnosis = _diagnose(tmp_path, PADDLE_WAITING)
    top = diagnosis.root_causes[0]
    assert (diagnosis.status, top.failure_class) == (Status.unknown, "rendezvous_failure")
    assert "2 retries" in top.title


# Real lines: a two-node fairseq job launched without the world size on either node, so the
# peer each rank dialled never listened (public issue facebookresearch/fairseq#1096).
NCCL_RETRYING = """\
pytorch-fairseq-worker-0:16:63 [0] NCCL INFO Call to connect returned Connection refused, retrying
pytorch-fairseq-worker-0:18:64 [2] NCCL INFO Call to connect returned Connection refused, retrying
pytorch-fairseq-worker-0:16:63 [0] NCCL INFO Call to connect returned Connection refused, retrying
"""


def test_a_log_that_ends_in_connection_retries_is_a_suspected_rendezvous_failure(
    tmp_path: Path,
) -> None:
    diagnosis = _diagnose(tmp_path, NCCL_RETRYING)
    assert diagnosis.status is Status.unknown
    top = diagnosis.root_causes[0]
    assert (top.failure_class, top.originating_rank) == ("rendezvous_failure", None)
    assert top.confidence < 0.6
    assert "3 retries" in top.title
    assert "never launched" in top.caveat


def test_retries_the_run_got_past_are_no_finding(tmp_path: Path) -> None:
    # NCCL retries while peers start; the communicator then forms and the program goes on.
    diagnosis = _diagnose(tmp_path, NCCL_RETRYING + NCCL_SETUP + TRAINER_STARTS)
    assert diagnosis.status is Status.no_failure
