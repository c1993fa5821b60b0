"""The ROCm catalogs (RCCL, the HIP runtime, the amdgpu kernel driver) send each message where it
belongs, and real lines from ROCm runs and their hosts' dmesg meet the signatures meant for them.

Each format below is the text the emitter's source prints (file named beside it, at a release
pinned in catalogs/<emitter>/source.yaml), with the `level` its extract.py records. Each real
line is copied from the public thread named beside it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from catalogs.core.mapping import UNCLEAR_PRIOR, load_mapping
from catalogs.core.source import emitter_dir, load_extractor, load_source
from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_mapped, decide

CATALOGS = Path(__file__).resolve().parents[2] / "catalogs"
RCCL_WARN = "gpu-017:20315:20402 [3] /usr/src/debug/rccl/build/hipify/src/{} NCCL WARN {}"


@pytest.mark.parametrize(
    ("emitter", "text", "level", "file", "failure_class"),
    [
        # RCCL src/enqueue.cc (rocm-6.2.2): a build without the collective's kernels
        (
            "rccl",
            "%s: unsupported collective. Please ensure the collective has been enabled in build.",
            "WARN",
            "src/enqueue.cc",
            "dependency_error",
        ),
        # RCCL src/misc/rocmwrap.cc
        (
            "rccl",
            "Failed to find ROCm runtime library in %s (RCCL_ROCR_PATH=%s)",
            "WARN",
            "src/misc/rocmwrap.cc",
            "dependency_error",
        ),
        # RCCL src/misc/rocm_smi_wrap.cc
        (
            "rccl",
            "ROCm SMI init failure %s",
            "WARN",
            "src/misc/rocm_smi_wrap.cc",
            "cuda_driver_mismatch",
        ),
        # RCCL src/clique/MsgQueue.cc
        (
            "rccl",
            "Message Queue timed out waiting for all ranks to receive messages.",
            "WARN",
            "src/clique/MsgQueue.cc",
            "collective_timeout",
        ),
        # RCCL src/enqueue.cc: hipFuncGetAttributes failed for one of RCCL's kernels
        (
            "rccl",
            "Failed to get kernel attributes",
            "WARN",
            "src/enqueue.cc",
            "unsupported_gpu_arch",
        ),
        # ROCm/clr hipamd/src/hip_error.cpp (rocm-6.2.2), as PyTorch's C10_HIP_CHECK prints them
        (
            "hip_runtime",
            "HIP error: out of memory",
            "ERROR",
            "hipamd/src/hip_error.cpp",
            "device_oom",
        ),
        (
            "hip_runtime",
            "HIP error: invalid device function",
            "ERROR",
            "hipamd/src/hip_error.cpp",
            "unsupported_gpu_arch",
        ),
        (
            "hip_runtime",
            "HIP error: no ROCm-capable device is detected",
            "ERROR",
            "hipamd/src/hip_error.cpp",
            "launch_config_error",
        ),
        (
            "hip_runtime",
            "HIP error: uncorrectable ECC error encountered",
            "ERROR",
            "hipamd/src/hip_error.cpp",
            "gpu_memory_ecc",
        ),
        (
            "hip_runtime",
            "HIP error: driver version is insufficient for runtime version",
            "ERROR",
            "hipamd/src/hip_error.cpp",
            "cuda_driver_mismatch",
        ),
        # ROCm/clr hipamd/src/hip_code_object.cpp
        (
            "hip_runtime",
            "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!",
            "LogPrintfError",
            "hipamd/src/hip_code_object.cpp",
            "unsupported_gpu_arch",
        ),
        # Linux 6.1 drivers/gpu/drm/amd/amdgpu/amdgpu_job.c, amdgpu_ras.c, amdgpu_device.c
        (
            "amdgpu",
            "ring %s timeout, signaled seq=%u, emitted seq=%u",
            "DRM_ERROR",
            "drivers/gpu/drm/amd/amdgpu/amdgpu_job.c",
            "gpu_hardware_fault",
        ),
        (
            "amdgpu",
            "RAS records:%d exceed threshold:%d",
            "dev_err",
            "drivers/gpu/drm/amd/amdgpu/amdgpu_ras_eeprom.c",
            "gpu_memory_ecc",
        ),
        (
            "amdgpu",
            "device lost from bus!",
            "dev_err",
            "drivers/gpu/drm/amd/amdgpu/amdgpu_device.c",
            "gpu_fell_off_bus",
        ),
    ],
)
def test_a_message_that_states_its_mechanism_gets_its_class(
    emitter: str, text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped(emitter, text, level, file, failure_class)


@pytest.mark.parametrize(
    ("text", "file"),
    [
        # RCCL src/init.cc: start-up advice every run of such a host prints
        (
            'Missing "iommu=pt" from kernel command line which can lead to system instablity or '
            "hang!",
            "src/init.cc",
        ),
        (
            "NUMA auto balancing enabled which can lead to variability in the RCCL performance! "
            'Disable by "sudo sysctl kernel.numa_balancing=0"',
            "src/init.cc",
        ),
        # RCCL src/graph/tuning.cc: a thread count clamped, and RCCL goes on
        ("Invalid %s %d (maximum %d).", "src/graph/tuning.cc"),
        # RCCL src/clique/CliqueManager.cc: clique kernels turned off, and RCCL goes on
        (
            "Unable to initialize shared memory. Disabling clique-based kernels",
            "src/clique/CliqueManager.cc",
        ),
    ],
)
def test_rccl_s_healthy_chatter_is_context_not_evidence(text: str, file: str) -> None:
    assert decide("rccl", text, "WARN", file).disposition == "context"


@pytest.mark.parametrize(
    ("text", "level"),
    [
        # Linux 6.12 amdgpu_ras.c: counts the driver says need nothing
        (
            "socket: %d, die: %d, %lld new correctable hardware errors detected in %s block",
            "RAS_EVENT_LOG",
        ),
        # Linux 6.1 amdgpu_device.c: a reset that worked
        ("GPU reset(%d) succeeded!", "dev_info"),
        # Linux 6.1 gmc_v9_0.c: a page fault's detail line under the fault itself
        ("\t MORE_FAULTS: 0x%lx", "dev_err"),
    ],
)
def test_amdgpu_s_healthy_or_detail_lines_are_context(text: str, level: str) -> None:
    assert decide("amdgpu", text, level, "drivers/gpu/drm/amd/amdgpu/x.c").disposition == "context"


def test_an_uncorrectable_count_is_not_read_as_a_correctable_one() -> None:
    text = "socket: %d, die: %d, %lld new uncorrectable hardware errors detected in %s block"
    decision = decide("amdgpu", text, "RAS_EVENT_LOG", "drivers/gpu/drm/amd/amdgpu/amdgpu_ras.c")
    assert decision.disposition == "mapped"


@pytest.mark.parametrize("emitter", ["rccl", "hip_runtime", "amdgpu"])
def test_an_unmatched_failure_message_keeps_a_low_prior(emitter: str) -> None:
    mapping = load_mapping(CATALOGS / emitter / "mapping.yaml")
    assert mapping.default.confidence <= UNCLEAR_PRIOR


def test_rccl_s_messages_are_read_as_its_hipified_build_prints_them(tmp_path: Path) -> None:
    # RCCL's build runs hipify-perl over src/ (string literals included); the transport's WARN
    # at src/transport/p2p.cc (rocm-6.2.2) prints hipIpcGetMemHandle, as users' logs show.
    source = tmp_path / "src" / "transport" / "p2p.cc"
    source.parent.mkdir(parents=True)
    source.write_text(
        'if (res != cudaSuccess) {\n  WARN("cudaIpcGetMemHandle failed : %s", '
        "cudaGetErrorString(res));\n}\n"
    )
    [message] = load_extractor(emitter_dir("rccl"))(tmp_path, "6.2")
    assert message.text == "hipIpcGetMemHandle failed : %s"
    assert (message.file, message.line, message.level) == ("src/transport/p2p.cc", 2, "WARN")


def test_rccl_generates_nothing_for_what_nccl_s_catalog_matches() -> None:
    assert load_source(emitter_dir("rccl")).covered_by == ["nccl_cat"]


@pytest.mark.parametrize(
    ("line", "family", "failure_class"),
    [
        # github.com/etched-ai/open-oasis/issues/27 (RX 6600, PyTorch ROCm)
        (
            "RuntimeError: HIP error: invalid device function",
            "hip_runtime_cat",
            "unsupported_gpu_arch",
        ),
        # github.com/pytorch/pytorch/issues/164346 (ROCm 7 nightly wheel)
        (
            "torch.AcceleratorError: HIP error: invalid device function",
            "hip_runtime_cat",
            "unsupported_gpu_arch",
        ),
        # github.com/JuliaGPU/AMDGPU.jl/issues/244 (gfx902, the runtime's abort)
        (
            '"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"',
            "hip_runtime_cat",
            "unsupported_gpu_arch",
        ),
        # github.com/ROCm/TheRock/issues/2707 (hipErrorInvalidValue: the class stays unclear)
        (
            "!!! Exception during processing !!! HIP error: invalid argument",
            "hip_runtime_cat",
            "unknown",
        ),
        # github.com/huggingface/autotrain-advanced/issues/737: the hand-written CUDA signature
        # knows hipErrorNoBinaryForGpu's string whatever the prefix
        (
            "RuntimeError: HIP error: no kernel image is available for execution on the device",
            "cuda",
            "unsupported_gpu_arch",
        ),
        # github.com/ROCm/rccl/issues/1454 (RCCL built from source, two MI100s): NCCL's own
        # CUCHECK wording, which RCCL kept, is NCCL's signature
        (
            "UVOSLinux:19402:19419 [0] /usr/src/debug/rccl/build/hipify/src/transport/p2p.cc:237"
            " NCCL WARN Cuda failure 'invalid argument'",
            "nccl_cat",
            "nccl_internal_error",
        ),
        # github.com/ROCm/rccl-tests/issues/120 (RCCL of ROCm 6.4: the hipified name)
        (
            "guest:5161:5196 [1] /longer_pathname_so_that_rpms_can_support_packaging_the_debug_info"
            "_for_all_os_profiles/src/out/ubuntu-22.04/22.04/build/rccl/hipify/src/transport/"
            "p2p.cc:239 NCCL WARN hipIpcGetMemHandle failed : invalid argument",
            "nccl",
            "network_config_error",
        ),
        # github.com/ROCm/rccl/issues/1454: NCCL's wording that RCCL kept is NCCL's signature
        (
            "UVOSLinux:31965:31971 [0] /usr/src/debug/rccl/build/hipify/src/proxy.cc:1190 NCCL WARN"
            " Socket recv failed while polling for opId=0x7d9e780c40c0",
            "nccl_cat",
            "peer_process_died",
        ),
        # github.com/yuzu-emu/yuzu/issues/2559 (amdgpu on Linux 5.11: a GPU hang)
        (
            "Nov 10 21:23:34 ryzen-desk kernel: [  175.106780] [drm:amdgpu_job_timedout [amdgpu]]"
            " *ERROR* ring gfx_0.0.0 timeout, signaled seq=9910, emitted seq=9912",
            "amdgpu_cat",
            "gpu_hardware_fault",
        ),
        # github.com/ROCm/amdgpu/issues/172 (a PyTorch process's GPU page fault)
        (
            "[ 4778.915423] amdgpu 0000:c6:00.0: amdgpu: [gfxhub0] no-retry page fault (src_id:0"
            " ring:24 vmid:3 pasid:32769)",
            "gpu",
            "illegal_memory_access",
        ),
        (
            "[ 4778.917054] amdgpu 0000:c6:00.0: amdgpu: VM_L2_PROTECTION_FAULT_STATUS:0x00301031",
            "amdgpu_cat",
            "illegal_memory_access",
        ),
    ],
)
def test_a_real_rocm_line_gets_its_class(
    matcher: Matcher, line: str, family: str, failure_class: str
) -> None:
    found = [m for m in matcher.scan_text(line) if m.signature.role.value != "context"]
    assert found, f"nothing matched {line[:80]!r}"
    top = max(m.signature.priority for m in found)
    winners = {
        (m.signature.family, m.signature.failure_class)
        for m in found
        if m.signature.priority == top
    }
    # The CUDA runtime's catalog reads an error string inside any wrapper that quotes it (NCCL's
    # "Cuda failure '...'" too); where that string's class is unclear it may fire beside the
    # wrapper's signature, but it never brings another class.
    assert (family, failure_class) in winners
    assert {c for _, c in winners} - {failure_class} <= {"unknown"}


@pytest.mark.parametrize(
    "line",
    [
        # github.com/ROCm/rccl/issues/1026 (RCCL's start-up advice on a healthy MI250X node)
        "g1072:1263985:1263985 [0] /long_pathname_so_that_rpms_can_package_the_debug_info/src/"
        'extlibs/rccl/build/src/init.cpp:122 NCCL WARN Missing "iommu=pt" from kernel command line'
        " which can lead to system instablity or hang!",
        "g1072:1263988:1263988 [3] /long_pathname_so_that_rpms_can_package_the_debug_info/src/"
        'extlibs/rccl/build/src/init.cpp:126 NCCL WARN Missing "HSA_FORCE_FINE_GRAIN_PCIE=1" from'
        " environment which can lead to low RCCL performance, system instablity or hang!",
    ],
)
def test_rccl_s_start_up_advice_is_no_failure(matcher: Matcher, line: str) -> None:
    assert [m for m in matcher.scan_text(line) if m.signature.role.value != "context"] == []


def test_a_rendered_rccl_only_line_is_rccl_s_and_a_shared_one_nccl_s(matcher: Matcher) -> None:
    # RCCL src/clique/MsgQueue.cc (rocm-6.2.2), and NCCL's src/misc/ipcsocket.cc kept in RCCL
    own = RCCL_WARN.format(
        "clique/MsgQueue.cc:79",
        "Message Queue timed out waiting for all ranks to receive messages.",
    )
    shared = RCCL_WARN.format(
        "misc/ipcsocket.cc:43", "UDS: Cannot bind provided name to socket. Name too large"
    )
    assert {m.signature.family for m in matcher.scan_text(own)} == {"rccl_cat"}
    assert {m.signature.family for m in matcher.scan_text(shared)} == {"nccl_cat"}


def test_amdgpu_s_reset_lifecycle_after_a_hang_is_no_new_cause(matcher: Matcher) -> None:
    # github.com/tomsom/yoga-linux/issues/38: the reset that followed a ring timeout went well
    line = "amdgpu 0000:33:00.0: amdgpu: GPU reset succeeded, trying to resume"
    assert [m for m in matcher.scan_text(line) if m.signature.role.value != "context"] == []
