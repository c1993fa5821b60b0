"""Real lines CANN (the Ascend NPU stack) printed in failed runs meet the signatures generated
from its error-code table, runtime sources and result-code descriptions (catalogs/ascend_cann),
its reviewed mapping decides codes as a reviewer would, and its extractor reads the checkout's
pieces as the catalog needs them.

Every log line below is copied from the public thread named beside it; the mapping cases are
format strings from the named CANN release.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from catalogs.ascend_cann.extract import (
    error_tag_messages,
    result_code_messages,
    runtime_messages,
    table_messages,
)
from denpex.match.scan import Matcher
from tests.catalogs.mappings import catalog_hits, decide

FAMILY = "ascend_cann_cat"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/vllm-project/vllm-ascend/issues/1443: TP=8 PP=3, an HCCL all-reduce never
        # completed (CANN 8.x quoted by torch_npu after aclrtSynchronizeDeviceWithTimeout)
        (
            "(train pid=8464) EI0002: [PID: 13075] 2025-06-25-10:45:23.586.187 The wait execution"
            " of the Notify register times out. Reason: The Notify register has not received the"
            " Notify record from remote rank: [unknown]. base information: [streamID:[1],"
            " taskID[8318285], tag[AllReduce_group_name_710], A",
            "collective_timeout",
        ),
        # the same thread: torch_npu's description of result code 507048
        (
            "(train pid=8464) [Error]: The execution of the internal task times out. ",
            "collective_timeout",
        ),
        # github.com/vllm-project/vllm-ascend/issues/486: GRPO with co-located vLLM, a rank never
        # joined the communicator
        (
            "[rank1]: EI0006: [PID: 1292363] 2025-04-08-18:07:20.444.436 Getting socket times out."
            " Reason: Remote Rank did not send the data in time. Please check the reason for the"
            " rank being stuck",
            "rendezvous_failure",
        ),
        # github.com/vllm-project/vllm-ascend/issues/14214: the runtime's event wait timed out
        # (CANN 8.5's inner-error layout, quoted by the vLLM worker)
        (
            "(Worker_DP0_TP5_EP5 pid=818) ERROR 08-13 15:31:21 [multiproc_executor.py:945]"
            " EE9999[PID: 818] 2026-08-13-15:31:21.888.208 (EE9999):  The error from"
            " device(chipId:5, dieId:0), serial number is 1, event wait timeout occurred during"
            " task execution, stream_id:44, sq_id:5, task_id:61293, event_id=55,"
            " timeout=234s.[FUNC:ProcessStarsWaitTimeoutErrorInfo][FILE:device_error_proc.cc]"
            "[LINE:1593]",
            "collective_timeout",
        ),
        # github.com/vllm-project/vllm-ascend/issues/12487: notify waits timed out on a PD
        # disaggregated deployment
        (
            "(Worker_DP2_TP0_EP8 pid=1071) ERROR 07-21 06:27:44 [multiproc_executor.py:962]    "
            "     The error from device(chipId:4, dieId:0), serial number is 1, notify wait timeout"
            " occurred during task execution, stream_id:142, sq_id:146, task_id:46645,"
            " notify_id=155, timeout=204s.[FUNC:ProcessStarsWaitTimeoutErrorInfo]"
            "[FILE:device_error_proc.cc][LINE:1587]",
            "collective_timeout",
        ),
        # github.com/Ascend/pytorch/issues/54: an older CANN prints the HCCL task timeout with
        # "timeout:" where 8.5 prints "timeout="; the statement before the fields is matched
        (
            "EI9999: 2024-10-21-10:42:00.358.410  The error from device(chipId:3, dieId:0), serial"
            " number is 9, hccl fftsplus task timeout occurred during task execution, stream_id:5,"
            " sq_id:5, task_id:38827, stuck notify num:1, timeout:30min(default).[FUNC:"
            "ProcessStarsHcclFftsPlusTimeoutErrorInfo][FILE:device_error_proc.cc][LINE:1435]",
            "collective_timeout",
        ),
        # github.com/Ascend/pytorch/issues/48: 16-NPU training, stream synchronize timed out
        (
            "[Error]: In the specified timeout waiting event, all tasks in the specified stream"
            " are not completed. ",
            "collective_timeout",
        ),
        (
            "EE1002: 2024-09-03-16:50:00.041.231 Stream synchronize timeout. rtDeviceSynchronize"
            " execute failed, reason=[stream sync timeout]",
            "collective_timeout",
        ),
        # github.com/vllm-project/vllm-ascend/issues/1972: an AI-core (aivec) exception
        (
            "EZ9999: [PID: 14897] 2025-07-23-10:35:42.381.401 The error from device(chipId:7,"
            " dieId:0), serial number is 2, there is an aivec error exception, core id is 5, error"
            " code = 0, dump info: pc start: 0x1240441f2000, current: 0x1240441f29f8, vec error"
            " info: 0x5b01e58e9c",
            "illegal_memory_access",
        ),
        # github.com/vllm-project/vllm-ascend/issues/3162: HCCL could not build the link between
        # the trainer and the rollout engine (CANN 8.1's EI0009)
        (
            "[rank1]: EI0009: [PID: 2225827] 2025-09-24-20:59:48.119.066 Transport init error."
            " Reason: [Create][DestLink]Create Dest error! createLink para:rank[1]-localUserrank"
            "[1]-localIpAddr[172.16.0.114], dst_rank[0]-remoteUserrank[0]-remote_ip_addr"
            "[172.16.0.114]",
            "network_config_error",
        ),
    ],
)
def test_a_real_cann_line_gets_its_class(matcher: Matcher, text: str, failure_class: str) -> None:
    hits = catalog_hits(matcher, text, FAMILY)
    assert hits, f"no {FAMILY} signature matched"
    assert failure_class in {m.signature.failure_class for m in hits}


@pytest.mark.parametrize(
    "text",
    [
        # github.com/vllm-project/vllm-ascend/issues/1443
        "(train pid=8464) [ERROR] 2025-06-25-10:45:23 (PID:13075, Device:0, RankID:8) ERR00100"
        " PTA call acl api failed",
        # github.com/vllm-project/vllm-ascend/issues/486 (a full stop after it in torch_npu 2.5)
        "[rank1]: [ERROR] 2025-04-08-18:07:20 (PID:1292363, Device:1, RankID:1) ERR01100 OPS call"
        " acl api failed.",
        # github.com/vllm-project/vllm-ascend/issues/10299: a vector-core timeout, no cause named
        "[Error]: Vector core execution timed out. ",
    ],
)
def test_tags_and_bare_result_codes_are_weak_evidence(matcher: Matcher, text: str) -> None:
    hits = catalog_hits(matcher, text, FAMILY)
    assert hits
    assert all(m.signature.confidence <= 0.35 for m in hits)


def test_the_stuck_notify_detail_is_context_not_a_signature(matcher: Matcher) -> None:
    # github.com/InternLM/lmdeploy/issues/3354: printed under the HCCL task timeout
    text = (
        "        The 0 stuck notify wait context info:(context_id=13, notify_id=17).[FUNC:"
        "ProcessStarsHcclFftsPlusTimeoutErrorInfo][FILE:device_error_proc.cc][LINE:1664]"
    )
    assert not catalog_hits(matcher, text, FAMILY)


@pytest.mark.parametrize(
    ("text", "level", "failure_class"),
    [
        # error_code.json (8.1.RC1 and 8.5.0)
        ("Failed to allocate memory.", "EL0004", "device_oom"),
        ("Failed to allocate [%s] bytes of NPU memory.", "EI0011", "device_oom"),
        (
            "The arguments for collective communication are inconsistent between ranks: tag [%s],"
            " parameter [%s], local [%s], remote [%s]",
            "EI0005",
            "collective_mismatch",
        ),
        (
            "The ranktable or rank is invalid,Reason:[%s]. Please check the configured ranktable."
            " [%s]",
            "EI0004",
            "launch_config_error",
        ),
        (
            "Value %s for environment variable %s is invalid. Expected value: %s.",
            "EE2002",
            "launch_config_error",
        ),
        (
            "The HCCL versions are inconsistent: tag [%s], local_version [%s], remote_version [%s]",
            "EI0008",
            "dependency_error",
        ),
        ("The network port is down.Suggest: %s", "EJ0002", "network_fabric_error"),
        # runtime sources (8.5.0)
        (
            "HBM MULTI BIT ECC, Uncorrectable ECC, device_id=%u, event_id=0x%x, time us=%lu.",
            "EL9999",
            "gpu_memory_ecc",
        ),
        # result-code descriptions
        ("The task scheduler loses the heartbeat.", "ACL", "gpu_hardware_fault"),
        ("The memory on the device is exhausted.", "ACL", "device_oom"),
    ],
)
def test_the_reviewed_mapping_names_the_cause(text: str, level: str, failure_class: str) -> None:
    decision = decide("ascend_cann", text, level, "conf/error_manager/error_code.json")
    assert decision.disposition == "mapped"
    assert decision.failure_class == failure_class


def test_warnings_are_context() -> None:
    text = "Failed to create disk cache directory %s. Result: %s. Reason: %s."
    assert decide("ascend_cann", text, "W40011", "x").disposition == "context"


def _checkout(tmp_path: Path) -> Path:
    (tmp_path / "conf/error_manager").mkdir(parents=True)
    (tmp_path / "conf/error_manager/error_code.json").write_text(
        json.dumps(
            {
                "error_info_list": [
                    {"ErrCode": "E60000", "ErrMessage": "The op[%s] input parameter[%s]"},
                    {
                        "errTitle": "Communication_Error_Get_Socket",
                        "ErrCode": "EI0006",
                        "ErrMessage": "Getting socket times out. Reason: %s",
                    },
                ]
            },
            indent=2,
        )
    )
    (tmp_path / "include/acl/error_codes").mkdir(parents=True)
    (tmp_path / "include/acl/error_codes/rt_error_codes.h").write_text(
        "#define  ACL_ERROR_RT_MODEL_EXECUTE              507011 // model execute failed\n"
    )
    npu = tmp_path / "torch_npu/csrc/core/npu"
    npu.mkdir(parents=True)
    (npu / "NPUErrorCodes.h").write_text(
        '        {507011, "Model execution failed.\\n\\\n        Locate the fault."},\n'
    )
    (npu / "NPUException.h").write_text(
        "enum class SubModule {\n    PTA = 0,\n    DIST = 2\n};\n"
        "enum class ErrCode {\n    SUC = 0,\n    ACL = 100\n};\n"
    )
    (npu / "NPUException.cpp").write_text(
        '{SubModule::PTA, "PTA"},\n{SubModule::DIST, "DIST"},\n{ErrCode::SUC, "success"},\n'
        '{ErrCode::ACL, "call acl api failed"}\n'
        'oss << " " << submoduleMap[submodule] << " " << errCodeMap[errorCode];\n'
    )
    rt = tmp_path / "src/runtime/feature/src/device"
    rt.mkdir(parents=True)
    (rt / "device_error_proc.cc").write_text(
        "void DeviceErrorProc::ProcessStarsWaitTimeoutErrorInfo()\n{\n"
        '    RT_LOG_CALL_MSG(ERR_MODULE_SYSTEM, "The error from device(chipId:%u, dieId:%u), "\n'
        '        "serial number is %" PRIu64 ", notify wait timeout occurred during task execution,'
        ' "\n        "stream_id:%hu, timeout=%us.", a, b, c, d, e);\n'
        '    RT_LOG_CALL_MSG(ERR_MODULE_HCCL, "HCCL link broken on %u.", a);\n}\n'
    )
    return tmp_path


def test_the_extractor_reads_each_piece(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path)
    table = table_messages(checkout, "8.5")
    assert [(m.level, m.function, m.text) for m in table] == [
        ("EI0006", "Communication_Error_Get_Socket", "Getting socket times out. Reason: %s")
    ]  # the operators' argument checks (E6) are left out
    assert table[0].line == 9  # the line of its "ErrCode"
    codes = result_code_messages(checkout, "8.5")
    assert [(m.text, m.function, m.level) for m in codes] == [
        ("Model execution failed.", "507011 ACL_ERROR_RT_MODEL_EXECUTE", "ACL")
    ]
    assert [m.text for m in error_tag_messages(checkout, "8.5")] == [
        "ERR00100 PTA call acl api failed",
        "ERR02100 DIST call acl api failed",
    ]
    runtime = runtime_messages(checkout, "8.5")
    assert [(m.level, m.text) for m in runtime] == [
        (
            "EE9999",
            "The error from device(chipId:%u, dieId:%u), serial number is %lu, notify wait"
            " timeout occurred during task execution",
        ),
        ("EI9999", "HCCL link broken on %u."),
    ]
    assert runtime[0].function == "ProcessStarsWaitTimeoutErrorInfo"


def test_a_release_without_runtime_source_reads_the_rest(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path)
    for path in sorted((checkout / "src").rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    (checkout / "src").rmdir()
    assert runtime_messages(checkout, "8.1") == []
