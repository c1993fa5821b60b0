"""Real lines verl printed in failed runs meet the signatures generated from its source
(catalogs/verl), and its reviewed mapping decides messages as a reviewer would: the batch
arithmetic against the GPUs, prompts longer than the configured length, the resource pools
against the Ray cluster, version checks, checkpoints to resume from, a non-finite gradient.

Every log line below is copied from the public thread named beside it; the mapping cases are
format strings from the named release's source.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from catalogs.core.mapping import load_mapping
from denpex.match.scan import Matcher
from tests.catalogs.mappings import (
    CATALOGS,
    assert_catalog_reads,
    assert_mapped,
    catalog_hits,
    decide,
)

FAMILY = "verl_cat"
RULES = Path(__file__).resolve().parents[2] / "rules"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/verl-project/verl/issues/870: the critic's gradient norm went NaN on two nodes
        ("(WorkerDict pid=9092) WARN: grad_norm is not finite: nan", "nan_or_inf"),
        # github.com/verl-project/verl/issues/544: a prompt longer than data.max_prompt_length
        (
            "NotImplementedError: sequence_length=1081 is larger than max_length=1024",
            "data_preprocessing_error",
        ),
        # github.com/verl-project/verl/issues/3373: the same, verl 0.5 with DeepScaleR's data
        (
            "NotImplementedError: sequence_length=1069 is larger than max_length=1024",
            "data_preprocessing_error",
        ),
        # github.com/verl-project/verl/issues/473: main_generation's batch over more workers
        (
            "AssertionError: only support equal chunk. Got size of DataProto 2 and chunk 4.",
            "framework_config_error",
        ),
        # github.com/PRIME-RL/TTRL/issues/43: the actor's mini-batch normalized to 0
        (
            "AssertionError: ppo_mini_batch_size 0 should be larger than 0 after normalization",
            "framework_config_error",
        ),
        # github.com/areal-project/AReaL/issues/105: a dataset without a known data_source
        (
            "NotImplementedError: Reward function is not implemented for data_source=''",
            "framework_config_error",
        ),
        # github.com/JarvisUSTC/DoctorAgent-RL/issues/10: a data_source no built-in scorer knows
        (
            "NotImplementedError: Reward function is not implemented for"
            " data_source='medical_consultation'",
            "framework_config_error",
        ),
    ],
)
def test_a_real_verl_line_gets_its_class(matcher: Matcher, text: str, failure_class: str) -> None:
    assert_catalog_reads(matcher, text, FAMILY, failure_class)


@pytest.mark.parametrize(
    "text",
    [
        # github.com/verl-project/verl/issues/539: a previous job held the node's GPUs
        "ValueError: Total available GPUs 0 is less than total desired GPUs 8",
        # github.com/verl-project/verl/issues/2515: the driver saw one node of two
        "ValueError: Total available GPUs 8.0 is less than total desired GPUs 16",
    ],
)
def test_the_resource_pool_check_is_left_to_the_hand_written_signature(
    matcher: Matcher, text: str
) -> None:
    """verl's GPU pre-check is ray.cluster_gpus_short's: the catalog maps the message to it and
    generates no signature of its own that would fire beside it."""
    hits = matcher.scan_text(text)
    assert [m.signature.id for m in hits] == ["ray.cluster_gpus_short"]
    assert hits[0].signature.failure_class == "launch_config_error"
    assert not catalog_hits(matcher, text, FAMILY)


@pytest.mark.parametrize(
    ("text", "level", "file", "failure_class"),
    [
        # 0.3 verl/trainer/ppo/ray_trainer.py: both the global and the per-GPU micro-batch set;
        # the text says "deprecated" but the ValueError stops the run
        (
            "[{name}] You have set both '{name}.micro_batch_size' AND"
            " '{name}.micro_batch_size_per_gpu'. Please remove '{name}.micro_batch_size' because"
            " only '*_micro_batch_size_per_gpu' is supported (the former is deprecated).",
            "ValueError",
            "verl/trainer/ppo/ray_trainer.py",
            "framework_config_error",
        ),
        # 0.4 verl/trainer/ppo/ray_trainer.py: train_batch_size x rollout.n against the GPUs
        (
            "real_train_batch_size ({real_train_batch_size}) must be divisible by total n_gpus"
            " ({n_gpus}).",
            "AssertionError",
            "verl/trainer/ppo/ray_trainer.py",
            "framework_config_error",
        ),
        # 0.3 verl/trainer/ppo/ray_trainer.py: a resource pool no set of nodes can hold
        (
            "Resource pool {resource_pool_name}: {num_gpus}*{num_nodes} cannot be satisfied in"
            " this ray cluster",
            "ValueError",
            "verl/trainer/ppo/ray_trainer.py",
            "launch_config_error",
        ),
        # 0.7 verl/utils/dataset/rl_dataset.py: a prompt over data.max_prompt_length
        (
            "Prompt length {len(raw_prompt_ids)} is longer than {self.max_prompt_length}.",
            "RuntimeError",
            "verl/utils/dataset/rl_dataset.py",
            "data_preprocessing_error",
        ),
        # 0.4 verl/third_party/vllm/__init__.py: the installed vLLM is not one verl dispatches to
        (
            "vllm version {package_version} not supported and SGLang also not Found. Currently"
            " supported vllm versions are 0.6.3 and 0.7.0+",
            "ValueError",
            "verl/third_party/vllm/__init__.py",
            "dependency_error",
        ),
        # 0.3 verl/trainer/ppo/ray_trainer.py: a resume path that is not a global_step_N folder
        (
            "resume ckpt must specify the global_steps",
            "AssertionError",
            "verl/trainer/ppo/ray_trainer.py",
            "checkpoint_mismatch",
        ),
        # 0.7 verl/trainer/ppo/ray_trainer.py: fewer samples than one batch
        (
            "Train dataloader is empty!",
            "AssertionError",
            "verl/trainer/ppo/ray_trainer.py",
            "corrupt_or_missing_data",
        ),
        # 0.3 verl/workers/rollout/vllm_rollout/vllm_rollout.py: vLLM's token budget
        (
            "Enable chunked prefill, max_num_batched_tokens is smaller than max_model_len,"
            " please increase max_num_batched_tokens or disable chunked prefill",
            "ValueError",
            "verl/workers/rollout/vllm_rollout/vllm_rollout.py",
            "framework_config_error",
        ),
        # 0.7 verl/single_controller/base/worker.py: two GPU visibility variables disagree
        (
            "Please use the same HIP_VISIBLE_DEVICES or CUDA_VISIBLE_DEVICES, inconsistant"
            " values found: {val} and {cuda_val}.",
            "AssertionError",
            "verl/single_controller/base/worker.py",
            "launch_config_error",
        ),
    ],
)
def test_the_mapping_gives_a_mechanism_its_class(
    text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped("verl", text, level, file, failure_class)


@pytest.mark.parametrize(
    ("text", "level", "file"),
    [
        # 0.3 verl/trainer/ppo/ray_trainer.py: no dataloader state saved, training goes on
        (
            "Warning: No dataloader state found at {dataloader_local_path}, will start from"
            " scratch",
            "PRINT",
            "verl/trainer/ppo/ray_trainer.py",
        ),
        # 0.7 verl/utils/reward_score/sandbox_fusion/utils.py: one sample's sandbox call
        (
            "{log_prefix}Sandbox API call failed. Last error: {last_error}",
            "ERROR",
            "verl/utils/reward_score/sandbox_fusion/utils.py",
        ),
        # 0.7 verl/workers/config/optimizer.py: a renamed option
        (
            "`warmup_style` is deprecated, use `lr_scheduler_type` instead.",
            "WARNING",
            "verl/workers/config/optimizer.py",
        ),
    ],
)
def test_a_report_the_run_survives_is_not_a_failure(text: str, level: str, file: str) -> None:
    assert decide("verl", text, level, file).disposition != "mapped"


def test_an_internal_invariant_keeps_a_low_prior() -> None:
    decision = decide("verl", "data must be a DataProto", "AssertionError", "verl/protocol.py")
    assert decision.disposition == "mapped"
    assert decision.failure_class == "python_exception"
    assert decision.confidence is not None and decision.confidence <= 0.35


def test_the_default_is_a_low_prior() -> None:
    mapping = load_mapping(CATALOGS / "verl" / "mapping.yaml")
    assert mapping.default.confidence is not None and mapping.default.confidence <= 0.35


def test_a_healthy_verl_line_is_not_matched(matcher: Matcher) -> None:
    for line in (
        "(TaskRunner pid=2189) step:12 - actor/pg_loss:0.013 - actor/grad_norm:0.412"
        " - critic/score/mean:0.61 - response_length/mean:412.5",
        "(TaskRunner pid=2189) [validate_config] All configuration checks passed successfully!",
        "(TaskRunner pid=2189) Training from scratch",
    ):
        assert not catalog_hits(matcher, line, FAMILY)


def test_the_catalog_reads_the_release_lines() -> None:
    accounting = json.loads((RULES / FAMILY / "CATALOG.json").read_text())
    assert [row["line"] for row in accounting["releases"]] == ["0.3", "0.4", "0.7"]
    assert all(row["found"] > 0 for row in accounting["releases"])
