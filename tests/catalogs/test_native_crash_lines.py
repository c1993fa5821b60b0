"""Real lines of a crashing process and of the GPU driver meet the signatures generated from
their emitters' source: glibc's heap and fortify aborts (catalogs/glibc), Open MPI's fatal-signal
handler (catalogs/openmpi, opal/util/stacktrace.c) and the NVIDIA driver's failed status checks
(catalogs/nvrm_status); the reviewed mappings decide their messages as a reviewer would.

Every log line below is copied from the public thread named beside it; the mapping cases are
texts as the named release's source prints them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from catalogs.core.mapping import UNCLEAR_PRIOR
from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_catalog_reads, assert_mapped, catalog_hits, decide

CATALOGS = Path(__file__).resolve().parents[2] / "catalogs"
CODES = "src/common/sdk/nvidia/inc/nvstatuscodes.h"


@pytest.mark.parametrize(
    ("text", "family", "failure_class"),
    [
        # github.com/NVIDIA/nccl/issues/1611: nccl-tests on GB200 over 10 nodes, NCCL 2.21.5
        ("free(): corrupted unsorted chunks", "glibc_cat", "native_crash"),
        # github.com/NVIDIA/nccl/issues/726: nccl-tests on Summit after an internal error
        ("corrupted double-linked list", "glibc_cat", "native_crash"),
        # github.com/NVIDIA/nccl/issues/1611: Open MPI's handler in the same process
        ("[rack1-93-slot7:186363] *** Process received signal ***", "openmpi_cat", "native_crash"),
        ("[rack1-93-slot7:186363] Signal: Aborted (6)", "openmpi_cat", "native_crash"),
        # github.com/NVIDIA/nccl/issues/1669: NCCL 2.26.2 crashed during init; the log ends here
        ("[rtptest1621:405884] *** Process received signal ***", "openmpi_cat", "native_crash"),
        # github.com/NVIDIA/nvshmem/issues/40: dmesg of an H200 node (575.57.08) whose NVLS
        # multicast setup failed; the thread's cause was the fabric state
        (
            "[1891044.581319] NVRM: nvCheckOkFailedNoLog: Check failed: NVLink fabric state cached"
            " by the driver is out of sync [NV_ERR_FABRIC_STATE_OUT_OF_SYNC] (0x00000087) returned"
            " from status @ mem_multicast_fabric.c:2917",
            "nvrm_status_cat",
            "nvlink_error",
        ),
    ],
)
def test_a_real_line_gets_its_class(
    matcher: Matcher, text: str, family: str, failure_class: str
) -> None:
    assert_catalog_reads(matcher, text, family, failure_class)


def test_the_signal_handler_names_the_crashed_process_and_its_signal(matcher: Matcher) -> None:
    # github.com/NVIDIA/nccl/issues/1611
    (received,) = catalog_hits(
        matcher, "[rack1-93-slot7:186363] *** Process received signal ***", "openmpi_cat"
    )
    assert received.signature.role.value == "root_cause"
    assert (received.captures["host"], received.captures["pid"]) == ("rack1-93-slot7", "186363")
    (signal,) = catalog_hits(matcher, "[rack1-93-slot7:186363] Signal: Aborted (6)", "openmpi_cat")
    assert signal.captures["signal"] == "Aborted" and signal.captures["signal_number"] == "6"
    # under mpirun --tag-output the rank's tag comes first; the host is still the handler's
    tagged = "[1,3]<stderr>:[rack1-93-slot7:186363] *** Process received signal ***"
    (found,) = catalog_hits(matcher, tagged, "openmpi_cat")
    assert found.captures["host"] == "rack1-93-slot7"
    # the block's details are context: no signature reads them
    for detail in (
        "[rack1-93-slot7:186363] Signal code:  (-6)",
        "[k8s-slave03:00956] Failing at address: 0x3bc",
        "[k8s-slave03:00956] [ 0] /usr/lib/x86_64-linux-gnu/libc.so.6(+0x45330)[0x7d1d0c3eb330]",
    ):
        assert not catalog_hits(matcher, detail, "openmpi_cat"), detail
    # ... but its closing banner is the crash too, for an excerpt that keeps only the block's end
    (closing,) = catalog_hits(
        matcher, "[k8s-slave03:00956] *** End of error message ***", "openmpi_cat"
    )
    assert closing.signature.failure_class == "native_crash"
    assert closing.captures["host"] == "k8s-slave03"


@pytest.mark.parametrize(
    ("text", "file", "failure_class"),
    [
        # glibc 2.39 malloc/malloc.c
        ("double free or corruption (out)", "malloc/malloc.c", "native_crash"),
        ("free(): double free detected in tcache 2", "malloc/malloc.c", "native_crash"),
        ("munmap_chunk(): invalid pointer", "malloc/malloc.c", "native_crash"),
        ("malloc(): corrupted top size", "malloc/malloc.c", "native_crash"),
        # glibc 2.39 debug/stack_chk_fail.c and debug/chk_fail.c in fortify_fail.c's format
        ("*** stack smashing detected ***: terminated", "debug/stack_chk_fail.c", "native_crash"),
        ("*** buffer overflow detected ***: terminated", "debug/chk_fail.c", "native_crash"),
    ],
)
def test_glibc_s_aborts_are_the_crash_itself(text: str, file: str, failure_class: str) -> None:
    decision = decide("glibc", text, "ABORT", file)
    assert decision.disposition == "mapped" and decision.failure_class == failure_class
    assert decision.role is not None and decision.role.value == "root_cause"
    assert decision.confidence == 0.5


def _status(description: str, name: str, value: int) -> str:
    return f"{description} [{name}] (0x{value:08X}) returned from %s @ %s:%d"


@pytest.mark.parametrize(
    ("description", "name", "value", "failure_class", "confident"),
    [
        # 580.142 src/common/sdk/nvidia/inc/nvstatuscodes.h
        ("Nvlink Fabric Probe failed", "NV_ERR_NVLINK_FABRIC_FAILURE", 0x82, "nvlink_error", True),
        ("Nvlink Training Error", "NV_ERR_NVLINK_TRAINING_ERROR", 0x77, "nvlink_error", True),
        (
            "Fabric Manager is not loaded",
            "NV_ERR_FABRIC_MANAGER_NOT_PRESENT",
            0x7A,
            "nvlink_error",
            True,
        ),
        ("Generic ECC error", "NV_ERR_ECC_ERROR", 0x0B, "gpu_memory_ecc", True),
        ("GPU lost from the bus", "NV_ERR_GPU_IS_LOST", 0x0F, "gpu_fell_off_bus", True),
        ("Generic RISC-V assert or halt", "NV_ERR_RISCV_ERROR", 0x79, "gpu_hardware_fault", True),
        ("Call timed out", "NV_ERR_TIMEOUT", 0x65, "gpu_hardware_fault", False),
        (
            "The requester does not have sufficient permissions",
            "NV_ERR_INSUFFICIENT_PERMISSIONS",
            0x1B,
            "launch_config_error",
            False,
        ),
    ],
)
def test_a_driver_status_that_names_a_mechanism_gets_its_class(
    description: str, name: str, value: int, failure_class: str, confident: bool
) -> None:
    text = _status(description, name, value)
    assert_mapped("nvrm_status", text, "CHECK", CODES, failure_class)
    decision = decide("nvrm_status", text, "CHECK", CODES)
    assert decision.confidence is not None
    assert (decision.confidence > UNCLEAR_PRIOR) is confident


@pytest.mark.parametrize(
    "text",
    [
        _status("Invalid argument to call", "NV_ERR_INVALID_ARGUMENT", 0x1F),
        _status("Generic Error: Invalid state", "NV_ERR_INVALID_STATE", 0x40),
        _status("Requested object not found", "NV_ERR_OBJECT_NOT_FOUND", 0x57),
        _status("Call not supported", "NV_ERR_NOT_SUPPORTED", 0x56),
        _status("Generic busy error", "NV_ERR_IN_USE", 0x17),
        # the driver means system and device memory alike: not a device OOM by itself
        _status("Out of memory", "NV_ERR_NO_MEMORY", 0x51),
        _status("Failure: Generic Error", "NV_ERR_GENERIC", 0xFFFF),
    ],
)
def test_a_generic_driver_status_is_context(text: str) -> None:
    decision = decide("nvrm_status", text, "CHECK", CODES)
    assert decision.disposition == "context"


def test_a_generic_driver_status_line_fires_no_signature(matcher: Matcher) -> None:
    line = (
        "NVRM: nvCheckOkFailedNoLog: Check failed: Invalid argument to call"
        " [NV_ERR_INVALID_ARGUMENT] (0x0000001F) returned from pRmApi->Control(pRmApi) @"
        " kern_bus.c:123"
    )
    assert not catalog_hits(matcher, line, "nvrm_status_cat")


_STACKTRACE = r"""
#define HOSTFORMAT "[%s:%05d] "
static void show_stackframe (int signo, siginfo_t * info, void * p)
{
    ret = snprintf(print_buffer, sizeof(print_buffer),
                   HOSTFORMAT "*** Process received signal ***\n",
                   stacktrace_hostname, getpid());
    ret = snprintf (tmp, size, HOSTFORMAT "Signal: %s (%d)\n",
                    stacktrace_hostname, getpid(), strsignal(signo), signo);
    snprintf(print_buffer, sizeof(print_buffer), HOSTFORMAT,
             stacktrace_hostname, getpid());
}
"""


def test_the_signal_handler_s_formats_are_read_with_their_prefix(tmp_path: Path) -> None:
    from catalogs.core.source import load_extractor

    (tmp_path / "opal/util").mkdir(parents=True)
    (tmp_path / "opal/util/stacktrace.c").write_text(_STACKTRACE)
    extract = load_extractor(CATALOGS / "openmpi")
    texts = [(m.text, m.level) for m in extract(tmp_path, "4.1")]
    assert texts == [
        ("[%s:%05d] *** Process received signal ***", "SIGNAL"),
        ("[%s:%05d] Signal: %s (%d)", "SIGNAL"),
    ]
