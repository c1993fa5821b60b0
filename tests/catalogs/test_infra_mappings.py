"""The reviewed mappings of the infrastructure emitters send each message where it belongs.

Each format below is the text the emitter's own source logs (file named beside it, at the
release pinned in catalogs/<emitter>/source.yaml), with the `level` its extract.py records.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from catalogs.core.mapping import UNCLEAR_PRIOR, load_mapping
from tests.catalogs.mappings import assert_mapped, decide

CATALOGS = Path(__file__).resolve().parents[2] / "catalogs"


@pytest.mark.parametrize(
    ("emitter", "text", "level", "file", "failure_class"),
    [
        # Slurm src/slurmd/slurmstepd/req.c
        (
            "slurm",
            "*** %s ON %s CANCELLED AT %s DUE TO TIME LIMIT ***",
            "slurmstepd: error: ",
            "src/slurmd/slurmstepd/req.c",
            "time_limit",
        ),
        (
            "slurm",
            "*** %s ON %s CANCELLED AT %s DUE TO PREEMPTION ***",
            "slurmstepd: error: ",
            "src/slurmd/slurmstepd/req.c",
            "preemption",
        ),
        (
            "slurm",
            "*** %s ON %s CANCELLED AT %s DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***",
            "slurmstepd: error: ",
            "src/slurmd/slurmstepd/req.c",
            "node_failure",
        ),
        (
            "slurm",
            "*** %s ON %s CANCELLED AT %s ***",
            "slurmstepd: error: ",
            "src/slurmd/slurmstepd/req.c",
            "job_cancelled",
        ),
        # Slurm src/plugins/task/cgroup/task_cgroup_memory.c
        (
            "slurm",
            "Detected %lu oom_kill event%s in %s. Some of the step tasks have been OOM Killed.",
            "slurmstepd: error: ",
            "src/plugins/task/cgroup/task_cgroup_memory.c",
            "host_oom",
        ),
        # Slurm job states as scontrol prints them (src/scontrol/info_job.c)
        (
            "slurm",
            "JobState=NODE_FAIL Reason=%s Dependency=%s",
            "   ",
            "src/common/slurm_protocol_defs.c",
            "node_failure",
        ),
        (
            "slurm",
            "JobState=%s Reason=OutOfMemory Dependency=%s",
            "   ",
            "src/common/job_state_reason.c",
            "host_oom",
        ),
        # kernel mm/oom_kill.c and drivers/edac/edac_mc.c
        (
            "kernel",
            "%s: Killed process %d (%s) total-vm:%lukB, anon-rss:%lukB, file-rss:%lukB, "
            "shmem-rss:%lukB, UID:%u pgtables:%lukB oom_score_adj:%hd",
            "err",
            "mm/oom_kill.c",
            "host_oom",
        ),
        (
            "kernel",
            "EDAC MC%d: %d UE %s%son %s (%s page:0x%lx offset:0x%lx grain:%ld%s%s)",
            "warn",
            "drivers/edac/edac_mc.c",
            "host_hardware_error",
        ),
        (
            "kernel",
            "[Hardware Error]: Machine check: Processor context corrupt",
            "emerg",
            "arch/x86/kernel/cpu/mce/severity.c",
            "host_hardware_error",
        ),
        # kernel drivers/pci/pcie/dpc.c
        (
            "kernel",
            "%s %s: DPC: containment event, status:%#06x source:%#06x",
            "info",
            "drivers/pci/pcie/dpc.c",
            "pcie_error",
        ),
        # rdma-core libibverbs/enum_strs.c
        (
            "rdma_core",
            "transport retry counter exceeded",
            "wc_status",
            "libibverbs/enum_strs.c",
            "network_fabric_error",
        ),
        # aws-ofi-nccl src/nccl_ofi_net.cpp
        (
            "aws_ofi_nccl",
            "NET/OFI EFA provider requires at least libfabric version 1.22.0.",
            "WARN",
            "src/nccl_ofi_net.cpp",
            "network_config_error",
        ),
    ],
)
def test_a_message_that_states_its_mechanism_gets_its_class(
    emitter: str, text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped(emitter, text, level, file, failure_class)


@pytest.mark.parametrize(
    ("emitter", "text", "level", "file"),
    [
        # kernel boot chatter on healthy hosts
        ("kernel", "%s %s: AER: enabled with IRQ %d", "info", "drivers/pci/pcie/aer.c"),
        ("kernel", "Disabling lock debugging due to kernel taint", "warn", "kernel/panic.c"),
        (
            "kernel",
            "[Firmware Warn]: GHES: Poll interval is 0 for generic hardware error "
            "source: %d, disabled.",
            "warn",
            "drivers/acpi/apei/ghes.c",
        ),
        # Slurm info-level output and a pending job's wait reason
        ("slurm", "topo_gres_cnt_avail[%d]:%lu", "slurmstepd: ", "src/interfaces/gres.c"),
        (
            "slurm",
            "JobState=%s Reason=Priority Dependency=%s",
            "   ",
            "src/common/job_state_reason.c",
        ),
        (
            "slurm",
            "JobState=COMPLETED Reason=%s Dependency=%s",
            "   ",
            "src/common/slurm_protocol_defs.c",
        ),
        # aws-ofi-nccl's informational selection line
        (
            "aws_ofi_nccl",
            "NET/OFI Selected provider is %s, fabric is %s (found %d nics)",
            "INFO",
            "src/nccl_ofi_net.cpp",
        ),
    ],
)
def test_healthy_chatter_is_context_not_evidence(
    emitter: str, text: str, level: str, file: str
) -> None:
    assert decide(emitter, text, level, file).disposition == "context"


@pytest.mark.parametrize("emitter", ["slurm", "kernel", "aws_ofi_nccl", "libfabric", "rdma_core"])
def test_an_unmatched_failure_message_keeps_a_low_prior(emitter: str) -> None:
    mapping = load_mapping(CATALOGS / emitter / "mapping.yaml")
    assert mapping.default.confidence <= UNCLEAR_PRIOR


@pytest.mark.parametrize("emitter", ["slurm", "kernel", "aws_ofi_nccl", "libfabric"])
def test_a_message_too_short_to_name_its_emitter_is_excluded(emitter: str) -> None:
    decision = decide(emitter, "Unknown error", "error", "x.c")
    assert decision.disposition == "excluded"
    assert decision.reason is not None and "too generic" in decision.reason
