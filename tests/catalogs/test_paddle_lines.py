"""Real lines PaddlePaddle printed in failed runs meet the signatures generated from its wheels
(catalogs/paddle), its reviewed mapping decides messages as a reviewer would, and its extractor
reads the libraries' texts as the catalog needs them.

Every log line below is copied from the public thread named beside it; the mapping cases are
format strings from the named release's wheel.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from catalogs.paddle.extract import _attributed, _statement
from catalogs.sostrings import pieces
from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_mapped, catalog_hits, decide

FAMILY = "paddle_cat"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/PaddlePaddle/PaddleDetection/issues/7252: the launcher's summary after the
        # only trainer died (paddle 2.3)
        (
            "ERROR 2022-11-02 08:42:32,186 launch_utils.py:604] ABORT!!! Out of all 1 trainers,"
            " the trainer process with rank=[0] was aborted. Please check its log.",
            "peer_process_died",
        ),
        # github.com/PaddlePaddle/Paddle/issues/33074: four trainers, the fourth aborted
        (
            "ERROR 2021-05-24 17:17:14,611 launch_utils.py:545] ABORT!!! Out of all 4 trainers,"
            " the trainer process with rank=[3] was aborted. Please check its log.",
            "peer_process_died",
        ),
        # github.com/PaddlePaddle/PaddleDetection/issues/7252: the DataLoader's worker monitor
        (
            "SystemError: (Fatal) DataLoader process (pid 1104) exited is killed by signal:"
            " Killed. (at /paddle/paddle/fluid/imperative/data_loader.cc:181)",
            "dataloader_worker_died",
        ),
        # github.com/PaddlePaddle/Paddle/issues/43411: the signal handler's summary (2.2.2)
        (
            "FatalError: `Segmentation fault` is detected by the operating system.",
            "native_crash",
        ),
        # github.com/PaddlePaddle/PaddleYOLO/issues/121: the process group's NCCL check
        (
            "Failed, NCCL error /paddle/paddle/fluid/distributed/collective/NCCLTools.h:227"
            " 'unhandled cuda error'",
            "nccl_internal_error",
        ),
        # github.com/PaddlePaddle/Paddle/issues/43197: a CUDA library the dynamic loader misses
        (
            "RuntimeError: (PreconditionNotMet) The third-party dynamic library"
            " (cublas64_102.dll;cublas64_10.dll) that Paddle depends on is not configured"
            " correctly. (error code is 126)",
            "dependency_error",
        ),
        # github.com/PaddlePaddle/PaddleNLP/issues/2980: the same on Linux; the hand-written
        # shared-library signature reads the loader's quoted error as well
        (
            "RuntimeError: (PreconditionNotMet) The third-party dynamic library (libcublas.so)"
            " that Paddle depends on is not configured correctly. (error code is libcublas.so:"
            " cannot open shared object file: No such file or directory)",
            "dependency_error",
        ),
        # github.com/PaddlePaddle/Paddle/issues/48421: a trainer retrying the master's store at a
        # wrong IP (the maintainer: the machine's network gives a wrong address)
        (
            "I1127 21:34:05.015228 3935673 tcp_utils.cc:107] Retry to connect to"
            " 0.1.68.146:63314 while the server is not yet listening.",
            "rendezvous_failure",
        ),
    ],
)
def test_a_real_paddle_line_gets_its_class(matcher: Matcher, text: str, failure_class: str) -> None:
    hits = catalog_hits(matcher, text, FAMILY)
    assert hits, f"no {FAMILY} signature matched"
    assert failure_class in {m.signature.failure_class for m in hits}


@pytest.mark.parametrize(
    "text",
    [
        # github.com/opendatalab/MinerU/issues/1700: the statement under paddle 2.6 / 3.0
        "Out of memory error on GPU 0. Cannot allocate 40.429688MB memory on GPU 0, 23.667969GB"
        " memory has been allocated and available memory is only 16.687500MB.",
        # github.com/PaddlePaddle/PaddleOCR/issues/1505: the 2.0 wording the catalog's releases
        # no longer print
        "Out of memory error on GPU 0. Cannot allocate 25.002197MB memory on GPU 0, available"
        " memory is only 15.187500MB.",
    ],
)
def test_the_allocator_s_out_of_memory_is_read_by_the_hand_written_signature(
    matcher: Matcher, text: str
) -> None:
    # the catalog's statement is mapped to cuda.paddle_out_of_memory and generates nothing
    assert not catalog_hits(matcher, text, FAMILY)
    found = matcher.scan_text(text)
    assert [m.signature.id for m in found] == ["cuda.paddle_out_of_memory"]
    assert found[0].signature.failure_class == "device_oom"


def test_the_launcher_summary_is_a_symptom_that_points_at_the_trainers_logs(
    matcher: Matcher,
) -> None:
    # github.com/PaddlePaddle/Paddle/issues/33074
    text = (
        "ERROR 2021-05-24 17:17:14,611 launch_utils.py:545] ABORT!!! Out of all 4 trainers,"
        " the trainer process with rank=[3] was aborted. Please check its log."
    )
    roles = {m.signature.role.value for m in catalog_hits(matcher, text, FAMILY)}
    assert roles == {"symptom"}


@pytest.mark.parametrize(
    ("text", "file", "failure_class"),
    [
        # 2.6 paddle/phi/core/distributed/check/nccl_dynamic_check.cc: the root's metadata
        # against this rank's tensor
        (
            "Tensors in communication are expected to have matching sizes.",
            "paddle/phi/core/distributed/check/nccl_dynamic_check.cc",
            "collective_mismatch",
        ),
        # 2.6 paddle/phi/core/distributed/comm_task_manager.cc: the communication watchdog
        (
            "Find timeout start but not finish task:",
            "paddle/phi/core/distributed/comm_task_manager.cc",
            "collective_timeout",
        ),
        # 3.3 paddle/phi/core/distributed/store/tcp_utils.h
        (
            "TCP connection reset by peer. Details: %s.",
            "paddle/phi/core/distributed/store/tcp_utils.h",
            "peer_process_died",
        ),
        # 2.6 paddle/phi/core/distributed/store/tcp_utils.cc: the master's port is taken
        (
            "Bind network on %s:%s failed.",
            "paddle/phi/core/distributed/store/tcp_utils.cc",
            "rendezvous_failure",
        ),
        # 2.6 paddle/phi/core/distributed/store/store_utils.cc: not started by the launcher
        (
            "The environment variable 'PADDLE_TRAINER_ENDPOINTS' cannot be found.",
            "paddle/phi/core/distributed/store/store_utils.cc",
            "launch_config_error",
        ),
        # 3.3 paddle/phi/core/memory/allocation/system_allocator.cc: a custom device's memory
        (
            "Out of memory error on %s %d. total memory is %s, used memory is %s, available"
            " memory is only %s.",
            "paddle/phi/core/memory/allocation/system_allocator.cc",
            "device_oom",
        ),
        # 2.6 paddle/fluid/imperative/data_loader.cc: a worker's SIGBUS
        (
            "ERROR: Unexpected BUS error encountered in DataLoader worker. This might be caused"
            " by insufficient shared memory (shm), please check whether use_shared_memory is set"
            " and storage space in /dev/shm is enough",
            "paddle/fluid/imperative/data_loader.cc",
            "shm_exhausted",
        ),
        # 3.3 paddle/fluid/imperative/reducer.cc: DataParallel's reducer (PaddleDetection#3105
        # quotes it; its whole statement is one long line that the pattern needs whole)
        (
            "A serious error has occurred here. Please set find_unused_parameters=True to"
            " traverse backward graph in each step to prepare reduce in advance.",
            "paddle/fluid/imperative/heter_ccl_context.cc",
            "ddp_usage_error",
        ),
        # 2.6 paddle/phi/backends/gpu/cuda/cuda_info.cc
        (
            "The GPU architecture in your current machine is ",
            "paddle/phi/backends/gpu/cuda/cuda_info.cc",
            "unsupported_gpu_arch",
        ),
        # 3.3 paddle/fluid/framework/compiled_program.cc: a CPU build in a GPU job
        (
            "Paddle can't use CUDA device since it's not compiled with CUDA,Please recompile or"
            " reinstall Paddle with GPU support.",
            "paddle/fluid/imperative/reducer.cc",
            "dependency_error",
        ),
    ],
)
def test_the_reviewed_mapping_names_the_runtime_s_cause(
    text: str, file: str, failure_class: str
) -> None:
    assert_mapped("paddle", text, "FRAGMENT", file, failure_class)


@pytest.mark.parametrize(
    ("text", "level", "failure_class"),
    [
        # 3.3 paddle/distributed/fleet/launch_utils.py
        (
            "ABORT!!! Out of all {nranks} trainers, the trainer process with rank={error_rank}"
            " was aborted. Please check its log.",
            "ERROR",
            "peer_process_died",
        ),
        # 3.3 paddle/distributed/spawn.py
        (
            "the number of visible devices({len(env_devices_list)}) is less than the number of"
            " spawn processes({nprocs}), please ensure that the correct `nprocs` argument is"
            " passed or the environment variable `CUDA_VISIBLE_DEVICES` is correctly configured.",
            "RuntimeError",
            "launch_config_error",
        ),
        # 3.3 paddle/io/dataloader/dataloader_iter.py: a warning that states a failure
        (
            "DataLoader {len(failed_workers)} workers exit unexpectedly, pids: {pids}",
            "WARNING",
            "dataloader_worker_died",
        ),
        # 3.3 paddle/distributed/parallel.py
        (
            "paddle.distributed initialize error, environment variable {var_name} is needed, but"
            " not set.",
            "ValueError",
            "launch_config_error",
        ),
    ],
)
def test_the_reviewed_mapping_names_the_launcher_s_cause(
    text: str, level: str, failure_class: str
) -> None:
    assert_mapped("paddle", text, level, "paddle/distributed/x.py", failure_class)


@pytest.mark.parametrize(
    ("text", "level", "disposition"),
    [
        # 2.6 libphi.so: a flag's help text compiled beside the allocators
        (
            "The maximum gpu memory limit that the process can allocate. If it is equal to 0,"
            " there would be no limit and all gpu memory would be available to the process.",
            "FRAGMENT",
            "excluded",
        ),
        # the comparison hint every PADDLE_ENFORCE_EQ appends
        ("  [Hint: Expected %s == %s, but received %s != %s.]", "FRAGMENT", "excluded"),
        # a value init.cc's signal handler quotes
        ("Segmentation fault", "FRAGMENT", "excluded"),
        # NCCL's own result string, quoted (the NCCL signatures read it)
        (
            "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.",
            "FRAGMENT",
            "excluded",
        ),
        # the TCP store's progress log
        ("The server starts to listen on ", "FRAGMENT", "context"),
        # 3.3 paddle/distributed/fleet/fleet.py: fleet's optional communication benchmark
        (
            "[Perf Warning] AllReduce Test Timeout! {ret} > {perf_threshold_time}",
            "WARNING",
            "excluded",
        ),
    ],
)
def test_notices_hints_and_help_texts_settle_nothing(
    text: str, level: str, disposition: str
) -> None:
    assert decide("paddle", text, level, "paddle/x.cc").disposition == disposition


def test_a_check_is_attributed_to_the_path_that_follows_its_first_text() -> None:
    # the layout of libphi.so (2.6): a unit's first check, its hint, then its __FILE__
    texts = [
        "/paddle/paddle/phi/core/distributed/store/tcp_utils.h",
        "Key %s not found in TCPStore.",
        "The environment variable 'PADDLE_TRAINER_ENDPOINTS' cannot be found.",
        "  [Hint: trainer_endpoints should not be null.]",
        "/paddle/paddle/phi/core/distributed/store/store_utils.cc",
    ]
    found = dict((text, file) for file, text in _attributed(texts))
    assert found["Key %s not found in TCPStore."] == "paddle/phi/core/distributed/store/tcp_utils.h"
    assert (
        found["The environment variable 'PADDLE_TRAINER_ENDPOINTS' cannot be found."]
        == "paddle/phi/core/distributed/store/store_utils.cc"
    )


def test_a_multi_line_check_is_cut_to_its_statement() -> None:
    # 2.6 cuda_allocator.cc: the statement, then advice several errors share
    text = (
        "\n\nOut of memory error on GPU %d. Cannot allocate %s memory on GPU %d, %s memory has"
        " been allocated and available memory is only %s.\n\nPlease check whether there is any"
        " other process using GPU %d.\n1. If yes, please stop them, or start PaddlePaddle on"
        " another GPU.\n2. If no, please decrease the batch size of your model. %s\n"
    )
    assert _statement(text) == (
        "Out of memory error on GPU %d. Cannot allocate %s memory on GPU %d, %s memory has been"
        " allocated and available memory is only %s."
    )


def test_a_library_string_is_read_whole_with_its_line_breaks_when_asked() -> None:
    # the installed torch's libc10.so holds a multi-line TORCH_CHECK text
    library = Path(torch.__file__).resolve().parent / "lib" / "libc10.so"
    whole = [p for p in pieces(library, newlines=True) if "\n" in p.strip()]
    assert whole
    last_line = whole[0].split("\n")[-1]
    assert last_line in pieces(library)
    assert whole[0] not in pieces(library)
