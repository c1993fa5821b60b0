"""Pyxis, enroot, WebDataset and the GCP GPUDirect-TCPX/TCPXO NCCL plugins: real lines meet
their catalog signatures, and the reviewed mappings send each message where it belongs.

Every line in REAL_LINES is copied from the public thread named beside it. Each format in
MAPPED is the text the emitter's own source logs (file named beside it, at a release pinned in
catalogs/<emitter>/source.yaml), with the `level` its extract.py records.
"""

from __future__ import annotations

import pytest

from catalogs.core.mapping import UNCLEAR_PRIOR, load_mapping
from denpex.match.scan import Matcher
from tests.catalogs.mappings import CATALOGS, assert_catalog_reads, assert_mapped, decide

EMITTERS = ["pyxis", "enroot", "webdataset", "gpudirect_tcpx", "gpudirect_tcpxo"]


@pytest.mark.parametrize(
    ("text", "family", "failure_class"),
    [
        # github.com/NVIDIA/pyxis/issues/127
        (
            "slurmstepd: error: pyxis: failed to import docker image",
            "pyxis_cat",
            "launch_config_error",
        ),
        # github.com/NVIDIA/pyxis/issues/61
        (
            "slurmstepd: error: pyxis: container start failed with error code: 1",
            "pyxis_cat",
            "launch_config_error",
        ),
        # github.com/NVIDIA/pyxis/issues/42
        (
            "slurmstepd: error: pyxis: seccomp filter failed: Function not implemented",
            "pyxis_cat",
            "dependency_error",
        ),
        # github.com/NVIDIA/pyxis/issues/172 (its title)
        (
            'error: pyxis: error: a container with name "pyxis_nemo-25.07.gpt_oss" does not'
            " exist, and --container-image is not set",
            "pyxis_cat",
            "launch_config_error",
        ),
        # github.com/NVIDIA/pyxis/issues/168 (enroot's log relayed by pyxis)
        (
            "slurmstepd: error: pyxis:     [ERROR] URL https://registry-1.docker.io/v2/"
            "evuedsoacr.azurecr.io/dc-ecosys-appl-eng/mlperf-nvidia/manifests/"
            "stable_diffusion-pyt returned error code: 401 Unauthorized",
            "enroot_cat",
            "launch_config_error",
        ),
        # github.com/NVIDIA/pyxis/issues/37
        (
            "slurmstepd: error: pyxis:     enroot-nsenter: failed to create user namespace:"
            " Permission denied",
            "enroot_cat",
            "dependency_error",
        ),
        # github.com/NVIDIA/pyxis/issues/61
        (
            "slurmstepd: error: pyxis:     enroot-switchroot: failed to execute: /bin/bash:"
            " No such file or directory",
            "enroot_cat",
            "launch_config_error",
        ),
        # github.com/NVIDIA/pyxis/issues/70
        (
            "error: pyxis:     [ERROR] Invalid image reference: docker://dockerd://mlperf-nvidia:minigo",
            "enroot_cat",
            "launch_config_error",
        ),
        # github.com/webdataset/webdataset/issues/440
        (
            "ValueError: you need to add an explicit nodesplitter to your input pipeline for"
            " multi-node training",
            "webdataset_cat",
            "framework_config_error",
        ),
        # github.com/google/nccl-plugin-gpudirecttcpx/issues/1
        (
            "tcpxResult_t tcpxCommProgress(tcpxComm*):1231 NCCL WARN 0x13b9b0082580:0x13b9b007cb00,"
            " nic 1, enp134s0, 172.16.0.49<45259><-172.16.0.48<52929> rx rx ctrl timeout cnt"
            " 7359786, nanos 10000015864",
            "gpudirect_tcpx_cat",
            "network_fabric_error",
        ),
    ],
)
def test_a_real_line_meets_its_catalog_signature(
    matcher: Matcher, text: str, family: str, failure_class: str
) -> None:
    assert_catalog_reads(matcher, text, family, failure_class)


@pytest.mark.parametrize(
    ("emitter", "text", "level", "file", "failure_class"),
    [
        # enroot src/bundle.sh
        (
            "enroot",
            "Not enough space left in %s (%s KB needed)",
            "ERROR",
            "src/bundle.sh",
            "disk_full",
        ),
        # enroot conf/hooks/98-nvidia.sh
        (
            "enroot",
            "Command not found: nvidia-container-cli, see https://github.com/NVIDIA/libnvidia-container",
            "ERROR",
            "conf/hooks/98-nvidia.sh",
            "dependency_error",
        ),
        # pyxis pyxis_slurmstepd.c
        (
            "pyxis",
            "pyxis: couldn't mkdir %s: %s",
            "slurmstepd: error: ",
            "pyxis_slurmstepd.c",
            "filesystem_permission",
        ),
        # pyxis args.c
        (
            "pyxis",
            "pyxis: --container-mounts: invalid format: %s",
            "srun: error: ",
            "args.c",
            "launch_config_error",
        ),
        # webdataset src/webdataset/gopen.py (a pipe: command that failed)
        (
            "webdataset",
            "{self.args}: exit {self.status} (read) {info}",
            "OSError",
            "src/webdataset/gopen.py",
            "corrupt_or_missing_data",
        ),
        # webdataset src/webdataset/compat.py
        (
            "webdataset",
            "No samples found in dataset; perhaps you have fewer shards than workers.\n"
            "Turn off using empty_check=False in the WebDataset constructor.",
            "ValueError",
            "src/webdataset/compat.py",
            "framework_config_error",
        ),
        # webdataset src/webdataset/tariterators.py
        (
            "webdataset",
            "{fname}: duplicate file name in tar file {suffix} {current_sample.keys()}",
            "ValueError",
            "src/webdataset/tariterators.py",
            "corrupt_or_missing_data",
        ),
        # nccl-plugin-gpudirect-tcpxo tcpdirect_plugin/fastrak_offload/init.cc
        (
            "gpudirect_tcpxo",
            "Timeout: RxDM not ready on %s after %d seconds: %s",
            "WARNING",
            "tcpdirect_plugin/fastrak_offload/init.cc",
            "network_config_error",
        ),
        # nccl-plugin-gpudirect-tcpxo tcpdirect_plugin/fastrak_offload/fastrak_plugin.cc
        (
            "gpudirect_tcpxo",
            "VERSION MISMATCH: Received Connect request with ncclSocketHandle version %d, but"
            " this plugin is version %d",
            "ERROR",
            "tcpdirect_plugin/fastrak_offload/fastrak_plugin.cc",
            "dependency_error",
        ),
        # nccl-plugin-gpudirecttcpx src/connect.cc
        (
            "gpudirect_tcpx",
            "update flow steering rule: local %s <- remote %s, failed against"
            " receive-datapath-manager: %s",
            "WARN",
            "src/connect.cc",
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
        ("pyxis", "pyxis: importing docker image: %s", "spank", "pyxis_slurmstepd.c"),
        (
            "pyxis",
            "pyxis: ignoring --container-mounts because neither --container-image nor"
            " --container-name is set",
            "srun: error: ",
            "args.c",
        ),
        (
            "webdataset",
            "WebDataset(shardshuffle=...) is None; set explicitly to False or a number",
            "WARNING",
            "src/webdataset/compat.py",
        ),
        ("gpudirect_tcpxo", "Failed to initialize GPUViz profiler factory", "ERROR", "x.cc"),
        (
            "gpudirect_tcpx",
            "NET/GPUDirectTCPX: Using %d threads and %d sockets per thread",
            "INFO",
            "src/connect.cc",
        ),
    ],
)
def test_progress_and_optional_telemetry_are_context(
    emitter: str, text: str, level: str, file: str
) -> None:
    assert decide(emitter, text, level, file).disposition == "context"


@pytest.mark.parametrize("emitter", EMITTERS)
def test_an_unmatched_failure_message_keeps_a_low_prior(emitter: str) -> None:
    mapping = load_mapping(CATALOGS / emitter / "mapping.yaml")
    assert mapping.default.confidence <= UNCLEAR_PRIOR
