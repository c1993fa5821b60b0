"""Real lines Triton Inference Server printed in failed (and healthy) starts meet the signatures
generated from its source (catalogs/triton_server), and its reviewed mapping decides messages as
a reviewer would.

Every line below is copied from the public thread named beside it.
"""

from __future__ import annotations

import pytest

from denpex.match.scan import Matcher
from tests.catalogs.mappings import decide


@pytest.mark.parametrize(
    ("text", "failure_class", "role"),
    [
        # github.com/triton-inference-server/server/issues/2858
        ("error: creating server: Internal - failed to load all models", "unknown", "symptom"),
        # github.com/triton-inference-server/tensorrtllm_backend/issues/524
        (
            "E0705 08:07:40.219789 79386 main.cc:245] failed to start GRPC service: Unavailable -"
            " Socket '0.0.0.0:18001' already in use ",
            "launch_config_error",
            "root_cause",
        ),
        # github.com/triton-inference-server/server/issues/8342
        (
            "\"failed to load 'ambernet' version 1: Invalid argument: unable to find backend"
            " library for backend 'onnxruntime', try specifying runtime on the model"
            ' configuration."',
            "dependency_error",
            "root_cause",
        ),
        # github.com/triton-inference-server/tensorrtllm_backend/issues/545 (the model table)
        (
            "| tensorrt_llm     | 1       | UNAVAILABLE: Not found: unable to load shared library:"
            " libnvinfer_plugin_tensorrt_llm.so.9: cannot open shared object file: No such f |",
            "dependency_error",
            "root_cause",
        ),
        # github.com/triton-inference-server/core/pull/233 (the model table on a CPU-only host)
        (
            "UNAVAILABLE: Invalid argument: instance group resnet_v1_50_savedmodel of model"
            " resnet_v1_50_savedmodel has kind KIND_GPU but no GPUs are available",
            "launch_config_error",
            "root_cause",
        ),
    ],
)
def test_a_real_triton_line_gets_its_class(
    matcher: Matcher, text: str, failure_class: str, role: str
) -> None:
    hits = [m for m in matcher.scan_text(text) if m.signature.family == "triton_server_cat"]
    assert hits, "no triton_server_cat signature matched"
    assert (failure_class, role) in {
        (m.signature.failure_class, m.signature.role.value) for m in hits
    }


@pytest.mark.parametrize(
    "text",
    [
        # github.com/triton-inference-server/tensorrtllm_backend/issues/545: no DCGM in the
        # container; the server serves without GPU metrics
        'W0723 23:47:04.846718 2084 metrics.cc:798] "DCGM unable to start: DCGM initialization'
        ' error"',
        # github.com/triton-inference-server/server/issues/7410: no pinned pool, the server goes on
        'W0709 21:42:36.708987 93 pinned_memory_manager.cc:271] "Unable to allocate pinned system'
        " memory, pinned memory pool will not be available: CUDA driver version is insufficient"
        ' for CUDA runtime version"',
    ],
)
def test_triton_notices_are_context_not_evidence(matcher: Matcher, text: str) -> None:
    hits = [m for m in matcher.scan_text(text) if m.signature.family == "triton_server_cat"]
    assert all(m.signature.role.value == "context" for m in hits)


@pytest.mark.parametrize(
    ("text", "level", "file"),
    [
        # core r25.08 src/infer_request.cc: one client sent the wrong shape
        (
            "{}unexpected shape for input '{}' for model '{}'. Expected {}, got {}. {}",
            "INVALID_ARG",
            "core/src/infer_request.cc",
        ),
        # server r25.08 src/http_server.cc: one request's malformed JSON
        (
            "Unable to parse 'trace_rate', got: {}",
            "INVALID_ARG",
            "server/src/http_server.cc",
        ),
        # core r25.08 src/dynamic_batch_scheduler.cc: the queue policy rejected one request
        ("Request timeout expired", "UNAVAILABLE", "core/src/dynamic_batch_scheduler.cc"),
    ],
)
def test_one_request_s_error_is_not_a_failed_server(text: str, level: str, file: str) -> None:
    assert decide("triton_server", text, level, file).disposition == "excluded"


def test_a_model_config_error_is_a_configuration_root_cause() -> None:
    # core r25.08 src/model_config_utils.cc
    decision = decide(
        "triton_server",
        "dynamic batching preferred size must be <= max batch size for {}",
        "INVALID_ARG",
        "core/src/model_config_utils.cc",
    )
    assert decision.failure_class == "framework_config_error"
