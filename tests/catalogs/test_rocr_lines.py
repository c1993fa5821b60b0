"""Real lines the ROCm runtime (ROCR) and the HIP runtime's device layer (ROCm/clr rocclr) printed
in failed AMD GPU runs meet the signatures generated from their source (catalogs/rocr,
catalogs/rocclr); the extractors read the formats as the source holds them, and the reviewed
mappings decide messages as a reviewer would.

Every real line below is copied from the public thread named beside it; the formats are the
texts the sources print (ROCR-Runtime src/core/runtime/hsa.cpp and runtime.cpp at rocm-6.2.4,
clr rocclr/device/rocm/rocdevice.cpp and hipamd/src/hip_memory.cpp at rocm-6.2.2).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from catalogs.core.mapping import UNCLEAR_PRIOR, load_mapping
from catalogs.core.source import emitter_dir, load_extractor, load_source
from denpex.match.scan import Matcher
from tests.catalogs.mappings import CATALOGS, assert_mapped, catalog_hits, decide

ROCR = "rocr_cat"
ROCCLR = "rocclr_cat"
HSA_CPP = "src/core/runtime/hsa.cpp"
RUNTIME_CPP = "src/core/runtime/runtime.cpp"
OUT_OF_RESOURCES = (
    "HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources."
    " This error may also occur when the core runtime library needs to spawn threads or create"
    " internal OS-specific events."
)


@pytest.mark.parametrize(
    ("line", "failure_class"),
    [
        # github.com/pytorch/pytorch/issues/60190: a device-side assert in PyTorch's own test on
        # ROCm (HIP's older wording of the queue callback)
        (
            ":0:rocdevice.cpp            :2502: 834917584587 us: Device::callbackQueue aborting"
            " with error : HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation resulted in a hardware"
            " exception. code: 0x1016",
            "device_side_assert",
        ),
        # github.com/AUTOMATIC1111/stable-diffusion-webui/issues/9283 (RX 5500 XT under an override)
        (
            ":0:rocdevice.cpp            :2673: 1263352162 us: 21870: [tid:0x7f64e3eff640]"
            " Device::callbackQueue aborting with error :"
            " HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to access memory"
            " beyond the largest legal address. code: 0x29",
            "illegal_memory_access",
        ),
        # github.com/ggml-org/whisper.cpp/issues/3576 (ROCm 7, the callback's current wording)
        (
            "rocdevice.cpp Callback: Queue 0x7fc220400000 aborting with error :"
            " HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to access memory"
            " beyond the largest legal address. code: 0x29",
            "illegal_memory_access",
        ),
        # github.com/doktor83/SRBMiner-Multi/issues/206
        (
            ":0:rocdevice.cpp            :2614: 102457364470 us: 6856 : [tid:0x7fe7bb747700]"
            " Device::callbackQueue aborting with error : HSA_STATUS_ERROR_MEMORY_FAULT: Agent"
            " attempted to access an inaccessible address. code: 0x2b",
            "illegal_memory_access",
        ),
        # github.com/ROCm/legacy-rocm-build/issues/5259: PyTorch on gfx942, the GPU reset
        (
            "HW Exception by GPU node-4 (Agent handle: 0x1ebc04e0) reason :GPU Hang",
            "gpu_hardware_fault",
        ),
    ],
)
def test_a_real_rocr_line_gets_its_class(matcher: Matcher, line: str, failure_class: str) -> None:
    hits = catalog_hits(matcher, line, ROCR)
    assert hits, f"no {ROCR} signature matched"
    assert failure_class in {m.signature.failure_class for m in hits}


def test_the_queue_callback_leaves_the_class_to_the_status_it_quotes(matcher: Matcher) -> None:
    # github.com/mila-iqia/milabench/pull/397: a timm benchmark on ROCm 6.x
    line = (
        ":0:rocdevice.cpp            :3586: 92087492418 us:  Callback: Queue 0x772c40900000"
        " aborting with error : HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation resulted in a"
        " hardware exception. code: 0x1016"
    )
    [callback] = catalog_hits(matcher, line, ROCCLR)
    assert (callback.signature.failure_class, callback.signature.confidence) == ("unknown", 0.2)
    [status] = catalog_hits(matcher, line, ROCR)
    assert status.signature.failure_class == "device_side_assert"
    assert status.signature.confidence <= UNCLEAR_PRIOR  # a trap; the assert line settles it


def test_out_of_resources_is_device_oom_only_with_little_memory_free(matcher: Matcher) -> None:
    prefix = ":0:rocdevice.cpp            :3016: 522882090391d us:  Callback: Queue 0x14878b400000"
    full = (
        f"{prefix} Aborting with error : {OUT_OF_RESOURCES} Code: 0x1008 Available Free mem : 4 MB"
    )
    [callback] = catalog_hits(matcher, full, ROCCLR)
    assert callback.signature.failure_class == "device_oom"
    assert callback.signature.confidence > UNCLEAR_PRIOR
    assert callback.captures["free_mem_mb"] == "4"
    # github.com/cms-sw/cmssw/issues/46624 printed it with 62 GB free: only the status text's
    # low prior reads that line
    plenty = full.replace("mem : 4 MB", "mem : 62084 MB")
    assert not catalog_hits(matcher, plenty, ROCCLR)
    assert {
        (m.signature.failure_class, m.signature.confidence <= UNCLEAR_PRIOR)
        for m in catalog_hits(matcher, plenty, ROCR)
    } == {("device_oom", True)}


def test_a_hip_allocation_failure_with_its_sizes_is_device_oom(matcher: Matcher) -> None:
    # hipamd/src/hip_memory.cpp's LogPrintfError, at AMD_LOG_LEVEL=1 (rendered from its format)
    line = (
        ":1:hip_memory.cpp           :329 : 7226550393d us:  Allocation failed : Device memory :"
        " required :2147483648 | free :1048576 | total :68702699520"
    )
    assert {m.signature.failure_class for m in catalog_hits(matcher, line, ROCCLR)} == {
        "device_oom"
    }


def test_rocr_s_memory_access_fault_is_the_hand_written_signature_s(matcher: Matcher) -> None:
    # github.com/ROCm/tensorflow-upstream/issues/1959
    line = (
        "Memory access fault by GPU node-2 (Agent handle: 0x38b6960) on address 0x1000. Reason:"
        " Page not present or supervisor privilege."
    )
    assert {m.signature.id for m in matcher.scan_text(line)} == {"gpu.rocm_memory_access_fault"}
    assert not catalog_hits(matcher, line, ROCR)


@pytest.mark.parametrize(
    ("text", "level", "file", "failure_class"),
    [
        (
            "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to access memory"
            " beyond the largest legal address.",
            "STATUS",
            HSA_CPP,
            "illegal_memory_access",
        ),
        (
            "HSA_STATUS_ERROR_INVALID_ISA: The instruction set architecture is invalid.",
            "STATUS",
            HSA_CPP,
            "unsupported_gpu_arch",
        ),
        (
            "HW Exception by GPU node-%u (Agent handle: %p) reason :%s",
            "STDERR",
            RUNTIME_CPP,
            "gpu_hardware_fault",
        ),
        (
            "HSA Error:  Incompatible kernel and userspace, %s disabled. Upgrade amdgpu.",
            "STDERR",
            "src/core/runtime/amd_topology.cpp",
            "cuda_driver_mismatch",
        ),
    ],
)
def test_a_rocr_message_that_states_its_mechanism_gets_its_class(
    text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped("rocr", text, level, file, failure_class)


@pytest.mark.parametrize(
    "text",
    [
        OUT_OF_RESOURCES,  # raised for scratch, queues, signals and threads alike
        "HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation resulted in a hardware exception.",
        "HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION: The agent attempted to execute an illegal shader"
        " instruction.",
        "HSA_STATUS_ERROR: A generic error has occurred.",
        "HSA_STATUS_ERROR_INVALID_ARGUMENT: One of the actual arguments does not meet a"
        " precondition stated in the documentation of the corresponding formal argument.",
    ],
)
def test_a_status_that_names_no_mechanism_keeps_a_low_prior(text: str) -> None:
    decision = decide("rocr", text, "STATUS", HSA_CPP)
    assert decision.disposition == "mapped"
    assert decision.confidence is not None and decision.confidence <= UNCLEAR_PRIOR


@pytest.mark.parametrize(
    ("text", "disposition"),
    [
        (
            "HSA_STATUS_INFO_BREAK: A traversal over a list of elements has been interrupted by"
            " the application before completing.",
            "context",
        ),
        ("HSA_EXT_STATUS_ERROR_IMAGE_SIZE_UNSUPPORTED: Image size is not supported.", "excluded"),
    ],
)
def test_rocr_s_informational_and_unreached_statuses_are_no_signatures(
    text: str, disposition: str
) -> None:
    assert decide("rocr", text, "STATUS", HSA_CPP).disposition == disposition


@pytest.mark.parametrize(
    ("text", "level", "failure_class"),
    [
        (
            "Callback: Queue %p Aborting with error : %s Code: 0x%x Available Free mem : %zu MB",
            "FATAL",
            "device_oom",
        ),
        ("Unsupported HSA device %s (PCI ID %x) for ISA %s", "ERROR", "unsupported_gpu_arch"),
        ("Cannot find CO in the bundle %s for ISA: %s", "ERROR", "unsupported_gpu_arch"),
        (
            "comgr %zu.%zu cannot support commpressed mode which need comgr 2.8+",
            "ERROR",
            "dependency_error",
        ),
    ],
)
def test_a_rocclr_message_that_states_its_mechanism_gets_its_class(
    text: str, level: str, failure_class: str
) -> None:
    assert_mapped("rocclr", text, level, "rocclr/device/rocm/rocdevice.cpp", failure_class)


@pytest.mark.parametrize("emitter", ["rocr", "rocclr"])
def test_an_unmatched_message_keeps_a_low_prior(emitter: str) -> None:
    assert load_mapping(CATALOGS / emitter / "mapping.yaml").default.confidence <= UNCLEAR_PRIOR


def test_rocr_reads_hsa_status_string_and_what_it_prints_in_either_layout(
    tmp_path: Path,
) -> None:
    status = (
        "hsa_status_t hsa_status_string(hsa_status_t status, const char** status_string) {\n"
        "  switch (status) {\n"
        "    case HSA_STATUS_SUCCESS:\n"
        '      *status_string = "HSA_STATUS_SUCCESS: The function has been executed";\n'
        "      break;\n"
        "    case HSA_STATUS_ERROR_INVALID_QUEUE:\n"
        '      *status_string = "HSA_STATUS_ERROR_INVALID_QUEUE: The queue "\n'
        '                       "is invalid.";\n'
        "      break;\n"
        "  }\n"
        "}\n"
    )
    printing = (
        'void f() {\n  fprintf(stderr, "Queue at %p inactivated due to async error:\\n\\t%s\\n",'
        ' q, m);\n  fprintf(log_file, "not the user\'s stream %d\\n", 1);\n'
        '  perror("Failed to read GPU memory");\n}\n'
    )
    for root in ("src", "runtime/hsa-runtime"):
        tree = tmp_path / root.replace("/", "_")
        (tree / root / "core/runtime").mkdir(parents=True)
        (tree / root / "core/util").mkdir(parents=True)
        (tree / root / "core/runtime/hsa.cpp").write_text(status)
        (tree / root / "core/runtime/queue.cpp").write_text(printing)
        (tree / root / "core/util/utils.h").write_text(
            '#define debug_print(fmt, ...) fprintf(stderr, "Warning: %s\\n", fmt)\n'
        )
        found = load_extractor(emitter_dir("rocr"))(tree, "6.2")
        assert sorted((m.level, m.text, m.function, m.file) for m in found) == [
            ("PERROR", "Failed to read GPU memory: %s", "", f"{root}/core/runtime/queue.cpp"),
            (
                "STATUS",
                "HSA_STATUS_ERROR_INVALID_QUEUE: The queue is invalid.",
                "HSA_STATUS_ERROR_INVALID_QUEUE",
                f"{root}/core/runtime/hsa.cpp",
            ),
            (
                "STDERR",
                "Queue at %p inactivated due to async error:\n\t%s",
                "",
                f"{root}/core/runtime/queue.cpp",
            ),
        ]


def test_rocclr_reads_the_always_printed_aborts_and_the_errors_only(tmp_path: Path) -> None:
    source = tmp_path / "rocclr" / "device" / "rocm" / "rocdevice.cpp"
    source.parent.mkdir(parents=True)
    source.write_text(
        "void f() {\n"
        '  ClPrint(amd::LOG_NONE, amd::LOG_ALWAYS, "Callback: Queue %p aborting with error : %s'
        ' code: 0x%x", q, m, s);\n'
        '  ClPrint(amd::LOG_INFO, amd::LOG_INIT, "Initializing HSA stack.");\n'
        '  guarantee(x != 0, "Invalid Memory Segment %d", x);\n'
        '  LogPrintfError("%s", "Fail allocation local memory");\n'
        '  LogWarning("Clamping the number of queues");\n'
        '  DevLogError("Debug builds only");\n'
        "}\n"
    )
    found = load_extractor(emitter_dir("rocclr"))(tmp_path, "6.2")
    assert [(m.level, m.text, m.line) for m in found] == [
        ("FATAL", "Callback: Queue %p aborting with error : %s code: 0x%x", 2),
        ("FATAL", "Invalid Memory Segment %d", 4),
        ("ERROR", "Fail allocation local memory", 5),
    ]


def test_rocclr_generates_nothing_for_what_the_hip_runtime_catalog_reads() -> None:
    assert load_source(emitter_dir("rocclr")).covered_by == ["hip_runtime_cat"]
