"""The reviewed mappings of the framework catalogs decide real messages as a reviewer would.

Every message below is a format string from the named release's source, with the level the
source raises or logs it at.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from catalogs.core import Decision, Mapping, Message, load_mapping

CATALOGS = Path(__file__).resolve().parents[2] / "catalogs"
FRAMEWORKS = ("deepspeed", "megatron", "transformers", "accelerate", "vllm")
FRAMEWORKS += ("sglang", "tgi", "ray", "jax", "lightning", "colossalai", "composer", "lmdeploy")
FRAMEWORKS += ("dgl", "tensorflow", "xgboost", "lightgbm", "dask_distributed", "paddle")
FRAMEWORKS += (
    "transformer_engine",
    "flash_attn",
    "triton",
    "xformers",
    "mmengine",
    "nemo",
    "ultralytics",
    "sentence_transformers",
    "spark",
    "torchrec",
    "fbgemm_gpu",
    "xla",
)


@cache
def _mapping(emitter: str) -> Mapping:
    return load_mapping(CATALOGS / emitter / "mapping.yaml")


def _decide(
    emitter: str, text: str, level: str, file: str = "x.py", style: str = "fstring"
) -> Decision:
    mapping = _mapping(emitter)
    message = Message(emitter, "latest", text, style, file, 1, level, "f")  # type: ignore[arg-type]
    return mapping.decide(message)


@pytest.mark.parametrize(
    ("emitter", "text", "level", "failure_class"),
    [
        # vllm 0.33 vllm/v1/core/kv_cache_planning.py
        (
            "vllm",
            "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
            "when initializing the engine.",
            "ValueError",
            "kv_cache_exhausted",
        ),
        # sglang 0.5.23 python/sglang/srt/mem_cache/kv_cache_configurator.py
        (
            "sglang",
            "Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static="
            "{get_schedule().mem_fraction_static}.",
            "ValueError",
            "kv_cache_exhausted",
        ),
        # text-generation-inference v3.3.7 backends/v3/src/lib.rs
        (
            "tgi",
            "Not enough memory to handle `max_total_tokens={0}`",
            "ERROR",
            "kv_cache_exhausted",
        ),
        # ray 2.60 python/ray/_private/process_watcher.py: lists the OOM killer among the reasons
        (
            "ray",
            "Raylet is terminated. Termination is graceful.Termination is unexpected. Possible "
            "reasons include: (1) SIGKILL by the user or system OOM killer",
            "ERROR",
            "node_failure",
        ),
        # lightning 2.6 src/lightning_fabric/plugins/environments/slurm.py
        (
            "lightning",
            "You set `num_nodes={num_nodes}` in Lightning, but the number of nodes configured in "
            "SLURM `--nodes={nnodes}` does not match. HINT: Set `num_nodes={nnodes}`.",
            "ValueError",
            "launch_config_error",
        ),
        # lightning 2.6 src/lightning_fabric/plugins/environments/lsf.py
        (
            "lightning",
            "Cannot determine global rank. Environment variable `JSM_NAMESPACE_RANK` not found. "
            "Make sure you run your executable with `jsrun`.",
            "ValueError",
            "launch_config_error",
        ),
        # lightning 2.6 src/lightning_fabric/strategies/fsdp.py
        (
            "lightning",
            "The FSDP strategy can only work with the `FSDPPrecision` plugin, found {precision}",
            "TypeError",
            "framework_config_error",
        ),
        # colossalai v0.5.0 colossalai/cli/launcher/multinode_runner.py (click.echo)
        (
            "colossalai",
            "Error: failed to run {cmds} on {hostinfo.hostname}, is localhost: "
            "{hostinfo.is_local_host}, exception: {e}",
            "ECHO",
            "launch_config_error",
        ),
        # colossalai v0.5.0 colossalai/booster/plugin/hybrid_parallel_plugin.py
        (
            "colossalai",
            "World size {dist.get_world_size()} is not divisible by tp_size {tp_size} * pp_size "
            "{pp_size}",
            "AssertionError",
            "framework_config_error",
        ),
        # composer 0.32 composer/utils/dist.py
        (
            "composer",
            "Torch distributed is initialized but environment variable {env_var} is not set.",
            "MissingEnvironmentError",
            "launch_config_error",
        ),
        # lmdeploy 0.18 lmdeploy/pytorch/engine/executor/base.py
        ("lmdeploy", "No enough gpu memory for kv cache.", "RuntimeError", "kv_cache_exhausted"),
        # dgl 2.1.0 python/dgl/distributed/dist_context.py
        (
            "dgl",
            "Please define DGL_IP_CONFIG to run DistGraph server",
            "AssertionError",
            "launch_config_error",
        ),
        # megatron core_v0.19 megatron/core/extensions/transformer_engine.py
        (
            "megatron",
            "Transformer Engine is not installed. Please install it with "
            "`pip install transformer-engine`.",
            "ImportError",
            "dependency_error",
        ),
    ],
)
def test_a_message_that_states_its_mechanism_gets_that_class(
    emitter: str, text: str, level: str, failure_class: str
) -> None:
    decision = _decide(emitter, text, level)
    assert decision.disposition == "mapped"
    assert decision.failure_class == failure_class


@pytest.mark.parametrize("emitter", FRAMEWORKS)
def test_notices_and_generic_texts_are_not_evidence(emitter: str) -> None:
    # megatron core_v0.19: a deprecation notice; a warning about a setting the run then uses
    deprecated = "get_default_load_sharded_strategy is deprecated and will be removed"
    assert _decide(emitter, deprecated, "WARNING").disposition == "excluded"
    recommended = (
        "When using sequence parallelism it is recommended to set the environment variable "
        "CUDA_DEVICE_MAX_CONNECTIONS to 1 for maximum speedup"
    )
    assert _decide(emitter, recommended, "WARNING").disposition == "context"
    # text-generation-inference router: reads alike in every program that binds a socket
    generic = _decide(emitter, "Failed to bind to {addr}: {err}", "ERROR", style="fmt")
    assert generic.disposition == "excluded"
    assert "too generic" in (generic.reason or "")


@pytest.mark.parametrize("emitter", FRAMEWORKS)
def test_an_unexplained_error_is_an_unclear_symptom(emitter: str) -> None:
    # ray 2.60 python/ray/autoscaler: a code path failed; the line does not say why
    decision = _decide(emitter, "Failed to drain {len(failed_to_drain)} raylet(s).", "ERROR")
    assert decision.disposition == "mapped"
    assert decision.confidence is not None and decision.confidence <= 0.35
    assert str(decision.role) == "symptom"


def test_tgi_request_validation_is_one_client_s_error_not_a_failed_server() -> None:
    # text-generation-inference v3.3.7 router/src/validation.rs
    decision = _decide(
        "tgi",
        "`max_new_tokens` must be <= {0}. Given: {1}",
        "ERROR",
        file="router/src/validation.rs",
        style="fmt",
    )
    assert decision.disposition == "excluded"


@pytest.mark.parametrize(
    ("text", "level", "disposition", "failure_class"),
    [
        # tensorflow 2.15-2.20: a piece of libtensorflow_framework.so.2's
        # tensorflow/core/common_runtime/collective_param_resolver_local.cc
        ("Shape mismatch in the collective instance ", "FRAGMENT", "mapped", "collective_mismatch"),
        # tensorflow 2.17 libtensorflow_cc.so.2, xla/tsl/distributed_runtime/coordination/
        # coordination_service.cc ("Task ", name, this piece)
        (
            " heartbeat timeout. This indicates that the remote task has failed, got preempted, "
            "or crashed unexpectedly. Check the task logs for an earlier error to debug further.",
            "FRAGMENT",
            "mapped",
            "peer_process_died",
        ),
        # tensorflow 2.20 tensorflow/python/distribute/collective_all_reduce_strategy.py:1024
        (
            "Cluster check alive failed, %s is down, aborting collectives: %s",
            "ERROR",
            "mapped",
            "peer_process_died",
        ),
        # tensorflow 2.20 tensorflow/python/distribute/distribute_coordinator.py:588
        ('"cluster" is not found in TF_CONFIG.', "ValueError", "mapped", "launch_config_error"),
        # tensorflow 2.15-2.20 tensorflow/core/common_runtime/base_collective_executor.cc: the
        # prefix of the status that aborted the collective, which is the evidence
        ("Collective ops is aborted by: ", "FRAGMENT", "excluded", None),
        # tensorflow 2.20 libtensorflow_cc.so.2: the coordination service's progress log
        (" has connected to coordination service. Incarnation: ", "FRAGMENT", "context", None),
    ],
)
def test_tensorflow_runtime_pieces_and_strategy_errors(
    text: str, level: str, disposition: str, failure_class: str | None
) -> None:
    style = "literal" if level == "FRAGMENT" or "%" not in text else "printf"
    decision = _decide("tensorflow", text, level, style=style)
    assert decision.disposition == disposition
    assert decision.failure_class == failure_class


def test_a_tensorflow_runtime_piece_no_rule_reads_is_an_unclear_symptom() -> None:
    # tensorflow 2.20 libtensorflow_cc.so.2 (coordination service agent): the words of a piece,
    # without the status streamed after it, do not name a cause
    decision = _decide("tensorflow", "Coordination service agent in error status: ", "FRAGMENT")
    assert decision.disposition == "mapped"
    assert decision.failure_class == "unknown"
    assert decision.confidence is not None and decision.confidence <= 0.35
