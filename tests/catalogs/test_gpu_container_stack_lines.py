"""The software that starts GPU containers: the NVIDIA Container Toolkit, NVIDIA's
k8s-device-plugin and the nvmlErrorString() texts that both (and libnvidia-container) quote.

The lines in LINES are rendered from the emitters' own formats (the file named beside each, at a
release pinned in catalogs/<emitter>/source.yaml) inside the wrapper that relays them; none is
copied from a public thread. Each format in MAPPED is the text the emitter's source logs, with
the `level` its extract.py records.
"""

from __future__ import annotations

import re

import pytest

from catalogs.core.mapping import UNCLEAR_PRIOR, load_mapping
from catalogs.gosource import find_calls, to_printf
from denpex.match.scan import Matcher
from tests.catalogs.mappings import CATALOGS, assert_catalog_reads, assert_mapped, decide

EMITTERS = ["nvidia_container_toolkit", "k8s_device_plugin", "nvml"]


@pytest.mark.parametrize(
    ("text", "family", "failure_class"),
    [
        # toolkit internal/modifier/cdi/registry.go + vendored CDI cache.go, relayed by Docker
        (
            "docker: Error response from daemon: failed to create task for container: failed to"
            " create shim task: OCI runtime create failed: could not apply required modification"
            " to OCI specification: error modifying OCI spec: failed to inject CDI devices:"
            " unresolvable CDI devices nvidia.com/gpu=all: unknown.",
            "nvidia_container_toolkit_cat",
            "launch_config_error",
        ),
        # libnvidia-container's requirement check, format quoted in the toolkit's
        # internal/requirements/constraints/binary.go
        (
            "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.8, please"
            " update your driver to a newer version, or use an earlier cuda container: unknown",
            "nvidia_container_toolkit_cat",
            "cuda_driver_mismatch",
        ),
        # nvmlErrorString() lowercased by libnvidia-container, relayed through runc's hook error
        (
            "OCI runtime create failed: runc create failed: unable to start container process:"
            " error during container init: error running hook #0: error running hook: exit"
            " status 1, stdout: , stderr: Auto-detected mode as 'legacy'\\nnvidia-container-cli:"
            " initialization error: nvml error: driver/library version mismatch: unknown",
            "nvml_cat",
            "cuda_driver_mismatch",
        ),
        # a short NVML string, read only after an NVML wrapper
        (
            "nvidia-container-cli: initialization error: nvml error: insufficient permissions",
            "nvml_cat",
            "filesystem_permission",
        ),
        # k8s-device-plugin internal/rm/nvml_manager.go returning the NVML string
        (
            "E1130 06:21:09.123456       1 main.go:198] error starting plugins: error creating"
            " plugin manager: unable to create plugins: failed to construct NVML resource"
            " managers: failed to initialize NVML: GPU is lost",
            "nvml_cat",
            "gpu_fell_off_bus",
        ),
        # k8s-device-plugin internal/plugin/factory.go
        (
            "E1130 06:21:09.123456       1 factory.go:99] Failed to initialize NVML:"
            " ERROR_LIBRARY_NOT_FOUND.",
            "k8s_device_plugin_cat",
            "cuda_driver_mismatch",
        ),
        # k8s-device-plugin internal/rm/health.go
        (
            "I1130 06:21:09.123456       1 health.go:169] XidCriticalError: Xid=79 on"
            " Device=GPU-7f3c2a10-4b5e-11ee-9c2d-0242ac120002; marking device as unhealthy.",
            "k8s_device_plugin_cat",
            "gpu_hardware_fault",
        ),
        # go-nvlib device.go vendored in k8s-device-plugin
        (
            "E1130 06:21:09.123456       1 main.go:198] error starting plugins: error getting"
            " plugins: failed to construct NVML resource managers: error building device map:"
            " error building GPU device map: error visiting device: error getting device"
            " name: ERROR_UNKNOWN",
            "k8s_device_plugin_cat",
            "node_failure",
        ),
    ],
)
def test_a_rendered_line_meets_its_catalog_signature(
    matcher: Matcher, text: str, family: str, failure_class: str
) -> None:
    assert_catalog_reads(matcher, text, family, failure_class)


@pytest.mark.parametrize(
    "text",
    [
        "Not Supported",
        "Unknown Error",
        "GPU is lost",
        "the file was not found: insufficient permissions on the share",
    ],
)
def test_a_short_nvml_string_alone_is_not_read_as_nvml(matcher: Matcher, text: str) -> None:
    assert not [
        m for m in matcher.scan_text(text, keep_all=True) if m.signature.family == "nvml_cat"
    ]


@pytest.mark.parametrize(
    ("emitter", "text", "level", "file", "failure_class"),
    [
        (
            "nvidia_container_toolkit",
            "couldn't find binary nvidia-container-cli in PATH: %s",
            "hook",
            "cmd/nvidia-container-runtime-hook/main.go",
            "dependency_error",
        ),
        (
            "nvidia_container_toolkit",
            "Ignoring devices requested by environment variable(s) in unprivileged container: %s",
            "WARNING",
            "internal/config/image/cuda_image.go",
            "launch_config_error",
        ),
        (
            "nvidia_container_toolkit",
            "requirements not met: %s",
            "error",
            "internal/modifier/csv.go",
            "cuda_driver_mismatch",
        ),
        (
            "k8s_device_plugin",
            "unable to load config: %s",
            "error",
            "cmd/nvidia-device-plugin/main.go",
            "launch_config_error",
        ),
        (
            "k8s_device_plugin",
            "all devices on the node must be configured with the same migEnabled value",
            "error",
            "internal/rm/device_map.go",
            "launch_config_error",
        ),
        (
            "nvml",
            "Driver/library version mismatch",
            "nvmlErrorString",
            "reference/nvml_error_strings.h",
            "cuda_driver_mismatch",
        ),
        (
            "nvml",
            "gpu is lost",
            "nvml_error_lowercase",
            "reference/nvml_error_strings.h",
            "gpu_fell_off_bus",
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
        ("k8s_device_plugin", "Starting GRPC server for '%s'", "INFO", "internal/plugin/server.go"),
        (
            "k8s_device_plugin",
            "You can check the prerequisites at: https://github.com/NVIDIA/k8s-device-plugin#prerequisites",
            "ERROR",
            "internal/plugin/factory.go",
        ),
        (
            "nvidia_container_toolkit",
            "Using OCI specification file path: %s",
            "INFO",
            "internal/oci/spec.go",
        ),
    ],
)
def test_status_lines_are_context(emitter: str, text: str, level: str, file: str) -> None:
    assert decide(emitter, text, level, file).disposition == "context"


@pytest.mark.parametrize("emitter", EMITTERS)
def test_an_unmatched_failure_message_keeps_a_low_prior(emitter: str) -> None:
    mapping = load_mapping(CATALOGS / emitter / "mapping.yaml")
    assert mapping.default.confidence <= UNCLEAR_PRIOR


GO = """package x

func (r *rt) start() error {
	// klog.Errorf("commented out %v", err)
	klog.Errorf("Failed to start plugin: %v", err)
	log.Panicln("could not open OCI spec:", err)
	klog.Error("Incompatible platform " + name + " detected")
	return fmt.Errorf("invalid value %q for %s: %w", v, `raw\\n`, err)
}
"""


def test_go_calls_are_read_as_printf_formats() -> None:
    klog = list(find_calls(GO, {"Errorf": "f", "Error": "print"}, re.compile("klog")))
    assert [(c.line, c.function, c.text) for c in klog] == [
        (5, "start", "Failed to start plugin: %s"),
        (7, "start", "Incompatible platform %s detected"),
    ]
    (panic,) = find_calls(GO, {"Panicln": "ln"}, re.compile("log"))
    assert panic.text == "could not open OCI spec: %s"
    (error,) = find_calls(GO, {"Errorf": "f"}, re.compile("fmt"))
    assert error.text == 'invalid value "%s" for %s: %s'
    assert to_printf("%+v %d %x %5.2f %% %T") == "%s %d %x %.2f %% %s"
