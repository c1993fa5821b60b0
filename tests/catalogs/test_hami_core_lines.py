"""Real lines HAMi-core printed in failed runs meet the signatures generated from its source
(catalogs/hami_core), its reviewed mapping decides messages as a reviewer would, and its
extractor reads each way HAMi-core reports (LOG_ERROR/WARN/MSG, the failure-reporting LOG_INFO
lines, QUIT_WITH_ERROR's stringized text).

Every real line below is copied from the public thread named beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from catalogs.hami_core.extract import extract
from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_catalog_reads, assert_mapped, catalog_hits, decide

FAMILY = "hami_core_cat"
RULES = Path(__file__).resolve().parents[2] / "rules"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/Project-HAMi/HAMi/issues/1090: the /tmp cache file another user created
        (
            "[HAMI-core ERROR (pid:162 thread=139751716722496 multiprocess_memory_limit.c:715)]:"
            " Fail to open shrreg /tmp/cudevshr.cache: errno=13",
            "filesystem_permission",
        ),
        # the same thread: the next step on the descriptor the open never gave
        (
            "[HAMI-core ERROR (pid:162 thread=139751716722496 multiprocess_memory_limit.c:737)]:"
            " Fail to lock shrreg /tmp/cudevshr.cache: errno=9",
            "filesystem_permission",
        ),
        # github.com/Project-HAMi/HAMi/issues/961: OpenShift, the pod's file under /usr/local/vgpu
        (
            "[HAMI-core ERROR (pid:17 thread=140395794540352 multiprocess_memory_limit.c:707)]:"
            " Fail to init shrreg /usr/local/vgpu/41ad5d5c-4392-4bcc-8014-55a2851b94bc.cache:"
            " errno=9",
            "filesystem_permission",
        ),
        # github.com/Project-HAMi/HAMi/issues/585: CUDA_ERROR_OUT_OF_MEMORY from the driver
        (
            "[HAMI-core ERROR (pid:7 thread=140360328144640 allocator.c:115)]: cuMemoryAllocate"
            " failed res=2",
            "device_oom",
        ),
        # github.com/Project-HAMi/HAMi/issues/1202: CUDA_ERROR_NO_DEVICE in a vGPU container
        (
            "[HAMI-core ERROR (pid:1436 thread=139781782480704 libvgpu.c:874)]: cuInit failed:100",
            "launch_config_error",
        ),
        # github.com/Project-HAMi/HAMi-core/issues/86: a pod stuck on the shared region's lock
        (
            "[HAMI-core Warn(60:139713597019904:multiprocess_memory_limit.c:552)]: Fail to lock"
            " shrreg in 300 seconds",
            "peer_process_died",
        ),
        (
            "[HAMI-core Warn(60:139713597019904:multiprocess_memory_limit.c:541)]: Lock shrreg"
            " timeout, try fix (60:161)",
            "peer_process_died",
        ),
        # github.com/Project-HAMi/HAMi-core/issues/63: a driver call that failed under HAMi-core;
        # the code alone names no cause, so the catalog says so at its low prior
        (
            "[HAMI-core ERROR (pid:362 thread=140045668926464 context.c:114)]: cuCtxSetCurrent"
            " failed res=4",
            "unknown",
        ),
    ],
)
def test_a_real_hami_core_line_gets_its_class(
    matcher: Matcher, text: str, failure_class: str
) -> None:
    assert_catalog_reads(matcher, text, FAMILY, failure_class)


def test_what_a_line_does_not_prove_stays_below_a_confident_prior(matcher: Matcher) -> None:
    # the driver's code, not HAMi-core's text, says why an allocation or cuInit failed
    for text in (
        "[HAMI-core ERROR (pid:7 thread=140360328144640 allocator.c:115)]: cuMemoryAllocate"
        " failed res=2",
        "[HAMI-core ERROR (pid:1436 thread=139781782480704 libvgpu.c:874)]: cuInit failed:100",
    ):
        hits = catalog_hits(matcher, text, FAMILY)
        assert hits and all(m.signature.confidence <= 0.35 for m in hits), text


def test_the_over_share_allocation_is_the_hand_written_signatures(matcher: Matcher) -> None:
    # the catalog maps HAMi-core's OOM line to gpu.hami_quota_oom and generates nothing for it
    line = (
        "[HAMI-core ERROR (pid:1046 thread=140457967137280 allocator.c:49)]: Device 0 OOM"
        " 21244149760 / 20971520000"
    )
    assert not catalog_hits(matcher, line, FAMILY)
    assert "gpu.hami_quota_oom" in {m.signature.id for m in matcher.scan_text(line)}


@pytest.mark.parametrize(
    "text",
    [
        # start-up and exit status at the default log level
        "[HAMI-core Msg(162:139751716722496:libvgpu.c:836)]: Initializing.....",
        # github.com/Project-HAMi/HAMi/issues/916: "not a problem, just ignore it"
        "[HAMI-core Msg(17:140395794540352:multiprocess_memory_limit.c:499)]: Calling exit"
        " handler 30",
        # a pod that asked for no memory share: 0m means no limit (HAMi-core#190)
        "[HAMI-core Warn(17:140395794540352:multiprocess_memory_limit.c:125)]: invalid device"
        " memory limit CUDA_DEVICE_MEMORY_LIMIT_0=0m",
        # LIBCUDA_LOG_LEVEL=3: the hook table names functions a driver release may lack
        "[HAMI-core Info(80:140225570006848:hook.c:271)]: can't find function"
        " cuMemBatchDecompressAsync in libcuda.so.1",
    ],
)
def test_a_healthy_or_informational_line_is_not_matched(matcher: Matcher, text: str) -> None:
    assert not catalog_hits(matcher, text, FAMILY)


def test_a_short_text_is_read_only_after_hami_cores_prefix(matcher: Matcher) -> None:
    # "Illegal device id: 3" is anyone's words; after HAMi-core's ERROR prefix it is its own,
    # with or without the pid and place posters sometimes strip. The index comes from
    # HAMi-core's own hooks, so the line names no cause: the low default
    for prefix in (
        "[HAMI-core ERROR (pid:9 thread=1 multiprocess_memory_limit.c:1226)]: ",
        "[HAMI-core ERROR]: ",
    ):
        hits = catalog_hits(matcher, f"{prefix}Illegal device id: 3", FAMILY)
        assert hits and all(m.signature.confidence <= 0.35 for m in hits)
    assert not catalog_hits(matcher, "Illegal device id: 3", FAMILY)


@pytest.mark.parametrize(
    ("text", "level", "file", "failure_class"),
    [
        (
            "Limit inconsistency detected for %dth device, %lu expected, get %lu",
            "ERROR",
            "src/multiprocess/multiprocess_memory_limit.c",
            "launch_config_error",
        ),
        (
            "The current version number %d.%d is different from the file's version number %d.%d",
            "ERROR",
            "src/multiprocess/multiprocess_memory_limit.c",
            "dependency_error",
        ),
        ("can't find library %s", "WARN", "src/cuda/hook.c", "dependency_error"),
        ("failed to open unified_lock file: %s", "ERROR", "src/utils.c", "filesystem_permission"),
        (
            "Postinit lock timeout after %d seconds - another process may have crashed",
            "ERROR",
            "src/multiprocess/multiprocess_memory_limit.c",
            "peer_process_died",
        ),
    ],
)
def test_the_mapping_gives_a_mechanism_its_class(
    text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped("hami_core", text, level, file, failure_class)


def test_recoveries_and_fallbacks_are_context() -> None:
    for text, level in [
        ("Owner %ld is dead (was SIGKILL'd), cleaning up stale lock", "WARN"),
        ("SET_TASK_PID FAILED - using container PID for accounting", "WARN"),
        ("Kick dead proc %d (proc_alive check)", "WARN"),
        ("unified_lock locked, waiting 1 second...", "MSG"),
    ]:
        assert decide("hami_core", text, level, "src/x.c").disposition == "context", text


def test_the_low_default_stays_low() -> None:
    decision = decide("hami_core", "NVML get process error, %s", "ERROR", "src/x.c")
    assert decision.disposition == "mapped"
    assert decision.rule == "default"
    assert decision.confidence is not None and decision.confidence <= 0.35


def test_the_extractor_reads_each_way_hami_core_reports(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "include").mkdir(parents=True)
    (src / "include" / "log_utils.h").write_text(
        "#define LOG_ERROR(msg, ...) { \\\n"
        '    fprintf(stderr, "[HAMI-core ERROR (pid:%d thread=%ld %s:%d)]: "msg"\\n", 1); \\\n'
        "}\n"
        "#define CHECK_DRV_API(f)  { \\\n"
        '    LOG_WARN("Driver error at %d: %d", __LINE__, status); \\\n'
        "}\n"
    )
    (src / "allocator.h").write_text(
        "#define QUIT_WITH_ERROR(__message) {    \\\n"
        '    LOG_ERROR("%s\\n",#__message);  \\\n'
        "    return -1;                          \\\n"
        "}\n"
        "#define INIT(x) {   \\\n"
        '    if (x == NULL) QUIT_WITH_ERROR("malloc failed"); \\\n'
        "}\n"
    )
    (src / "memory_limit.c").write_text(
        "void init(void) {\n"
        '    LOG_ERROR("Fail to open shrreg %s: errno=%d", shr_reg_file, errno);\n'
        '    LOG_ERROR("Device2GetComputeRunningProcesses failed %d\\n",res);\n'
        '    LOG_WARN("Fail to lock shrreg in %d seconds",\n'
        "             SEQ_POINT_MARK);\n"
        '    LOG_MSG("Initializing.....");\n'
        '    LOG_INFO("can\'t find function %s in %s", name, lib);\n'
        '    LOG_INFO("put_device_info finished %d", count);\n'
        '    LOG_DEBUG("Hijacking %s failed", name);\n'
        "    LOG_ERROR(message_variable);\n"
        "}\n"
    )
    found = {(m.level, m.text, m.style) for m in extract(tmp_path, "2.9")}
    assert found == {
        ("WARN", "Driver error at %d: %d", "printf"),
        ("ERROR", '"malloc failed"', "literal"),
        ("ERROR", "Fail to open shrreg %s: errno=%d", "printf"),
        ("ERROR", "Device2GetComputeRunningProcesses failed %d", "printf"),
        ("WARN", "Fail to lock shrreg in %d seconds", "printf"),
        ("MSG", "Initializing.....", "literal"),
        ("INFO", "can't find function %s in %s", "printf"),
    }


def test_the_catalog_reads_every_pinned_ref() -> None:
    accounting = json.loads((RULES / FAMILY / "CATALOG.json").read_text())
    assert [row["line"] for row in accounting["releases"]] == ["2.4", "2.6", "2.9"]
    assert all(row["found"] > 0 and row["signatures"] > 0 for row in accounting["releases"])
