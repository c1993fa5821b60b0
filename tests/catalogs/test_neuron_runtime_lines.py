"""Real lines the AWS Neuron runtime (NRT), its collectives (CCOM), neuronx-cc and torch-neuronx
printed in failed Trainium / Inferentia runs meet the signatures generated from the messages the
aws-neuron-sdk documentation shows (catalogs/neuron_runtime), and its reviewed mapping decides
the documented messages as a reviewer would.

Every line below is copied from the public thread named beside it.
"""

from __future__ import annotations

import pytest

from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_mapped, catalog_hits, decide

FAMILY = "neuron_runtime_cat"
EMITTER = "neuron_runtime"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/aws-neuron/aws-neuron-sdk/issues/1014: tracing LLaVA 1.5 7B on one NC
        (
            "2024-Oct-15 18:01:18.347720  3882:3882  ERROR  TDRV:log_dev_mem"
            "                             Failed to allocate 172.000MB (usage: tensors) on ND 0:NC"
            " 0, current utilization:",
            "device_oom",
        ),
        # github.com/aws-neuron/transformers-neuronx/issues/92: Llama 3 70B on inf2.24xlarge
        (
            "2024-Jul-10 09:14:35.191118 12878:14362 ERROR  TDRV:log_dev_mem"
            "                             Failed to allocate 43.325MB (usage: dma rings) on ND 3:NC"
            " 0, current utilization:",
            "device_oom",
        ),
        # github.com/aws-neuron/aws-neuron-sdk/issues/884: neuronx-cc's estimate (SDK 2.18.2), the
        # end of the RuntimeError torch-neuronx raised (after the compiler's command line)
        (
            "2024-05-10T23:47:40Z [XCG815]  Estimated peak HBM usage (22.839451) exceeds 16GB. Neff"
            " won't be able to load on chip - Please open a support ticket at"
            " https://github.com/aws-neuron/aws-neuron-sdk/issues/new",
            "device_oom",
        ),
        # github.com/huggingface/optimum-neuron/issues/528: Mistral-7B fine-tuning
        (
            "2024-Mar-22 11:54:25.793636 2087184:2087514 ERROR  TDRV:tdrv_one_tmpbuf_reserve"
            "                 Number of ONE TMPBUF pages requested exceeded the max number of pages"
            " allowed (requested: 18, max allowed: 16).",
            "device_oom",
        ),
        (
            "2024-Mar-22 11:54:25.794143 2087184:2087514 ERROR  TDRV:copy_and_stage_mr"
            "                       Failed to reserve one tmpbuf memory",
            "device_oom",
        ),
        # github.com/vllm-project/vllm/issues/12443: vLLM on Neuron, torch-neuronx's allocation
        (
            "ERROR 02-11 14:20:32 engine.py:389] RuntimeError: nrt_tensor_allocate status=4"
            ' message="Allocation Failure"',
            "device_oom",
        ),
        # github.com/huggingface/optimum-neuron/pull/668: the runtime's failure dump
        (
            "2024-Jul-30 14:22:31.305961 65191:69012 ERROR   NRT:nrt_infodump"
            "                            Failure: NRT_RESOURCE in nrt_load()",
            "device_oom",
        ),
        # github.com/aws-neuron/aws-neuron-sdk/issues/713: 32 workers on one trn1.32xlarge
        (
            "2023-Aug-01 16:14:43.0241 332066:332494 [29] include/socket.h:579 CCOM WARN Timeout"
            " waiting for RX (waited 120 sec) - retrying",
            "collective_timeout",
        ),
        (
            "2023-Aug-01 16:14:43.0210 332066:332508 [31] bootstrap.cc:89 CCOM WARN Timeout"
            " waiting for incoming connection (waited 120 sec)",
            "collective_timeout",
        ),
        (
            "2023-Aug-01 16:12:43.0204 332066:332438 [21] bootstrap.cc:106 CCOM WARN Call to accept"
            " failed : Too many open files",
            "fd_or_process_limit",
        ),
        # github.com/aws-neuron/aws-neuron-sdk/issues/851: T5 tensor parallel, SDK 2.18
        (
            "2024-May-21 16:14:20.0020 58091:58701 [0] init.cc:137 CCOM WARN OFI plugin initNet()"
            " failed is EFA enabled?",
            "network_config_error",
        ),
        (
            "2024-May-21 16:16:20.0121 58091:58701 [0] include/socket.h:541 CCOM WARN Timeout"
            " waiting for RX (waited 120 sec) - retrying, [bootstrapInit, rank: 0/8/-1]",
            "collective_timeout",
        ),
        (
            "2024-May-21 16:08:34.244955 58100:58100 ERROR  TDRV:tdrv_init_mla_phase1"
            "                    Could not open the nd3",
            "launch_config_error",
        ),
        # github.com/aws-neuron/aws-neuron-samples/issues/44: the line a maintainer names
        (
            "ERROR  TDRV:tdrv_get_dev_info                       No neuron device available",
            "launch_config_error",
        ),
        # github.com/aws-neuron/aws-neuron-sdk/issues/1148: NxD Inference, Llama 3.2 multimodal
        (
            "RuntimeError: Failed to execute the model status=1003 message=Numerical Error",
            "nan_or_inf",
        ),
    ],
)
def test_a_real_neuron_line_gets_its_class(matcher: Matcher, text: str, failure_class: str) -> None:
    hits = catalog_hits(matcher, text, FAMILY)
    assert hits, f"no {FAMILY} signature matched"
    assert failure_class in {m.signature.failure_class for m in hits}
    # and it is what the line reports
    assert failure_class in {m.signature.failure_class for m in matcher.scan_text(text)}


@pytest.mark.parametrize(
    "text",
    [
        # github.com/aws-neuron/aws-neuron-sdk/issues/1189: a generic status names no cause
        "2025-Jun-28 22:19:15.506590  8652:8728  ERROR   NRT:nrt_infodump"
        "                            Failure: NRT_INVALID in nrt_load()",
        # github.com/aws-neuron/aws-neuron-sdk/issues/351
        "2021-Nov-01 06:02:18.0992 13660:14125 ERROR  NMGR:dlr_infer"
        "                               Inference completed with err: 1004",
        # github.com/huggingface/optimum-neuron/issues/528
        "2024-Mar-22 11:54:25.794203 2087184:2087514 ERROR  NMGR:kmgr_load_nn_post_metrics"
        "               Failed to load NN: /tmp/ubuntu/neuroncc_compile_workdir/f566ca79-9797-4099-"
        "8fc1-57840de6225b/model.MODULE_5934394564483856852+d41d8cd9.neff, err: 4",
    ],
)
def test_a_generic_runtime_failure_is_a_low_prior_symptom(matcher: Matcher, text: str) -> None:
    hits = catalog_hits(matcher, text, FAMILY)
    assert hits, f"no {FAMILY} signature matched"
    for hit in hits:
        assert hit.signature.failure_class == "unknown"
        assert hit.signature.role.value == "symptom"
        assert hit.signature.confidence <= 0.35


@pytest.mark.parametrize(
    ("text", "level", "file", "failure_class"),
    [
        # nrt-troubleshoot.rst, Hardware Errors: the device's memory
        (
            "(FATAL-RT-UNDEFINED-STATE) Uncorrectable HBM memory error is detected. Execution"
            " results may be invalid. Please terminate this instance to prevent future impact from"
            " the hardware error.",
            "ERROR",
            "neuron-runtime/nrt-troubleshoot.rst",
            "gpu_memory_ecc",
        ),
        (
            "Failure: NRT_EXEC_HW_ERR_NC_UE in %s",
            "ERROR",
            "src/libnrt/include/nrt/nrt_status.h",
            "gpu_memory_ecc",
        ),
        (
            "[MLA %d][NC %d] DMA TX engine %d is in an abort state",
            "ERROR",
            "neuron-runtime/nrt-troubleshoot.rst",
            "gpu_hardware_fault",
        ),
        # a hang inside a collective
        (
            "(FATAL-RT-UNDEFINED-STATE) missing collectives status on Neuron Device %d NC %d, model"
            " %s - suspected hang in collectives operation %d out of %d",
            "ERROR",
            "neuron-runtime/nrt-troubleshoot.rst",
            "collective_timeout",
        ),
        # cores held by another process, under both nouns the runtime prints
        (
            "%s not available - Requested:%s Available:%d",
            "ERROR",
            "neuron-runtime/nrt-troubleshoot.rst",
            "launch_config_error",
        ),
        # the root communicator's address
        (
            "Invalid NCCL_COMM_ID [%s], please use format: <ipv4>:<port> or [<ipv6>]:<port>%s",
            "CCOM",
            "neuron-runtime/nrt-troubleshoot.rst",
            "rendezvous_failure",
        ),
        # compiler and runtime out of step
        (
            "NEFF version mismatch supported: %s received: %s",
            "TEXT",
            "neuron-runtime/nrt-troubleshoot.rst",
            "dependency_error",
        ),
        # the compiler's documented error codes
        ("[NCC_EOOM001] %s", "NCC", "compiler/error-codes/EOOM001.rst", "device_oom"),
        ("[NCC_EVRF051] %s", "NCC", "compiler/error-codes/EVRF051.rst", "shape_or_dtype_error"),
        ("[NCC_EVRF065] %s", "NCC", "compiler/error-codes/EVRF065.rst", "dependency_error"),
    ],
)
def test_the_mapping_reads_the_documented_mechanisms(
    text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped(EMITTER, text, level, file, failure_class)


def test_the_runtimes_notes_after_an_error_are_context() -> None:
    for text in (
        "Displaying Current Memory Utilization:",
        "Missing infer_status notification: (end:%d)",
    ):
        assert (
            decide(EMITTER, text, "ERROR", "neuron-runtime/nrt-troubleshoot.rst").disposition
            == "context"
        )
