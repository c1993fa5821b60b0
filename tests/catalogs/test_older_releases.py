"""Lines that older releases print (NCCL, nccl-tests and the Python frameworks), as users quote
them, are matched by the catalogs read from those releases, with the class the reviewed mapping
gives them.

Every line below is verbatim from a public report; the release named is the one whose source
prints that wording (catalogs/<emitter>/source.yaml pins it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from denpex.match.scan import Matcher

RULES = Path(__file__).resolve().parents[2] / "rules"

# NVIDIA/nccl-tests#14: all_reduce_perf built from nccl-tests 1.0 in a container without host
# networking; the second and third lines came after NCCL_DEBUG=WARN.
NCCL_TESTS_1_0 = "NCCL failure common.cu:874 'unhandled system error'"
IBVERBS_MISSING = (
    "e66aa18dc444:3171:3171 [0] misc/ibvwrap.cu:61 WARN Failed to open libibverbs.so[.1]"
)
SOCKET_CREATION = (
    "e66aa18dc444:3171:3171 [0] include/socket.h:311 WARN Socket creation failed : "
    "Address family not supported by protocol"
)


def _winners(matcher: Matcher, line: str) -> dict[str, str]:
    return {m.signature.id: m.signature.failure_class for m in matcher.scan_text(line)}


def test_nccl_tests_1_0_relays_ncclsystemerror_as_the_current_tests_do(matcher: Matcher) -> None:
    # nccl-tests 1.0 printed "NCCL failure %s:%d '%s'" with NCCL <= 2.3's bare result string;
    # from 2.0 it prints "%s: Test NCCL failure ...", which the hand-written
    # nccl.unhandled_system_error claims (nccl_internal_error). The old line gets that class.
    winners = _winners(matcher, NCCL_TESTS_1_0)
    assert set(winners.values()) == {"nccl_internal_error"}
    [signature] = [s for s in matcher.library.signatures if s.id in winners]
    assert signature.emitter == "nccl_tests" and signature.releases == "==1.0"
    current = (
        "gpu-017: Test NCCL failure common.cu:874 "
        "'unhandled system error (run with NCCL_DEBUG=INFO for details)'"
    )
    assert _winners(matcher, current) == {"nccl.unhandled_system_error": "nccl_internal_error"}


def test_a_cuda_error_quoted_by_nccl_tests_is_matched_whatever_the_error(matcher: Matcher) -> None:
    # nccl-tests 1.0 "Cuda failure %s:%d '%s'", 2.0 on "%s: Test CUDA failure %s:%d '%s'":
    # an error a hand-written CUDA signature knows is claimed by it (higher priority), any
    # other still by the catalog, as a low-prior symptom.
    for line in (
        "Cuda failure common.cu:501 'out of memory'",
        "node-3: Test CUDA failure common.cu:732 'out of memory'",
    ):
        winners = _winners(matcher, line)
        assert set(winners.values()) == {"nccl_internal_error"}
        assert all(id_.startswith("nccl_tests_cat.") for id_ in winners)
    known = _winners(matcher, "Cuda failure common.cu:501 'unspecified launch failure'")
    assert list(known) == ["cuda.unspecified_launch_failure"]


def test_socket_creation_failure_of_nccl_2_3_is_a_network_configuration_error(
    matcher: Matcher,
) -> None:
    # NCCL 2.3 to 2.14 "Net : Socket creation failed : %s", 2.16 on "ncclSocketInit: Socket
    # creation failed : %s": one signature over both wordings. socket() refusing the address
    # family means the interface NCCL picked is not usable in this container (the maintainer
    # in nccl-tests#14; fixed with --net host), so the mapping says network_config_error.
    # This log's build printed "WARN" without "NCCL " and without "Net : ".
    winners = _winners(matcher, SOCKET_CREATION)
    assert list(winners.values()) == ["network_config_error"]
    [signature] = [s for s in matcher.library.signatures if s.id in winners]
    assert signature.releases == ">=2.3,<=2.23"
    assert signature.role == "root_cause"
    prefix = "gpu-017:20315:20402 [3]"
    error = "Address family not supported by protocol"
    for wording in (
        f"{prefix} include/socket.h:322 NCCL WARN Net : Socket creation failed : {error}",
        f"{prefix} misc/socket.cc:723 NCCL WARN ncclSocketInit: Socket creation failed : {error}",
    ):
        assert _winners(matcher, wording) == winners


def test_the_libibverbs_warning_of_old_nccl_blames_no_library(matcher: Matcher) -> None:
    # NCCL <= 2.11 printed it as a WARN on hosts without the verbs library and used sockets;
    # the maintainer calls it harmless. GDRCopy's "Failed to open %s", the only catalog
    # pattern it could fall under, is an optional library NCCL goes on without (context).
    assert _winners(matcher, IBVERBS_MISSING) == {}


@pytest.mark.parametrize(
    "line",
    [
        # nccl src/os/linux_socket_pair.cc "close failed: %s", too generic alone: matched after
        # NCCL's prefix, with or without "NCCL " before "WARN"
        "gpu-017:20315:20402 [3] os/linux_socket_pair.cc:58 NCCL WARN close failed: Bad fd",
        "gpu-017:20315:20402 [3] os/linux_socket_pair.cc:58 WARN close failed: Bad fd",
    ],
)
def test_a_prefix_anchored_message_accepts_warn_without_nccl(matcher: Matcher, line: str) -> None:
    assert any(id_.startswith("nccl_cat.") for id_ in _winners(matcher, line))


def test_a_timestamped_warn_of_another_program_is_not_nccls(matcher: Matcher) -> None:
    line = "2024-05-01 12:00:01 WARN close failed: Bad file descriptor"
    assert not any(id_.startswith("nccl_cat.") for id_ in _winners(matcher, line))


def test_the_catalogs_account_for_the_older_lines() -> None:
    for family, lines in (
        ("nccl_cat", ["2.3", "2.4", "2.7", "2.10", "2.12", "2.14", "2.16", "2.18"]),
        ("nccl_tests_cat", ["1.0", "2.0", "2.11", "2.13"]),
        ("deepspeed_cat", ["0.9", "0.12", "0.14", "0.16", "0.17"]),
        ("transformers_cat", ["4.30", "4.38", "4.46", "4.51", "4.57"]),
        ("accelerate_cat", ["0.18", "0.20", "0.27", "0.34", "1.6", "1.12"]),
        ("vllm_cat", ["0.2", "0.4", "0.5", "0.6", "0.8", "0.31"]),
        ("lightning_cat", ["1.9", "2.1", "2.4"]),
        ("ray_cat", ["2.9", "2.30", "2.58"]),
        ("megatron_cat", ["0.5", "0.8", "0.12", "0.17"]),
    ):
        accounting = json.loads((RULES / family / "CATALOG.json").read_text())
        read = [row["line"] for row in accounting["releases"]]
        assert read[: len(lines)] == lines
        assert all(row["found"] > 0 for row in accounting["releases"])


def _signature(matcher: Matcher, line: str):  # type: ignore[no-untyped-def]
    [id_] = _winners(matcher, line)
    return next(s for s in matcher.library.signatures if s.id == id_)


# ---- DeepSpeed ------------------------------------------------------------------------------


def test_zero3_inflight_params_of_deepspeed_0_14_is_deepspeeds_own_message(
    matcher: Matcher,
) -> None:
    # OpenRLHF/OpenRLHF#312 (2024): partitioned_param_coordinator.reset_step raised it up to
    # 0.15; 0.16 removed the check, so no catalog read from a current release knew it. The line
    # names no mechanism: a low-prior symptom of DeepSpeed's, above the generic fallback.
    line = (
        "RuntimeError: still have inflight params [{'id': 723, 'status': 'AVAILABLE', "
        "'numel': 4194304, 'ds_numel': 4194304, 'shape': (512, 8192), 'ds_shape': (512, 8192)"
    )
    signature = _signature(matcher, line)
    assert signature.emitter == "deepspeed" and signature.releases == ">=0.9,<=0.14"
    assert signature.failure_class == "python_exception" and signature.confidence <= 0.35


def test_a_zero_checkpoint_resumed_on_another_world_size_is_a_checkpoint_mismatch(
    matcher: Matcher,
) -> None:
    # THUDM/GLM#136 (2023, DeepSpeed 0.8-0.9) and deepspeedai/Megatron-DeepSpeed#439 (2024,
    # torchrun's "[rank5]: "): one wording since 0.9, one signature.
    for line in (
        "deepspeed.runtime.zero.utils.ZeRORuntimeException: The checkpoint being loaded used a "
        "DP world size of 256 but the current world size is 2. Automatic adjustment of ZeRO's "
        "optimizer state partitioning with a new world size is not currently supported.",
        "[rank5]: deepspeed.runtime.zero.utils.ZeRORuntimeException: The checkpoint being loaded "
        "used a DP world size of 8 but the current world size is 16. Automatic adjustment of "
        "ZeRO's optimizer state partitioning with a new world size is not currently supported.",
    ):
        signature = _signature(matcher, line)
        assert signature.failure_class == "checkpoint_mismatch"
        assert signature.releases == ">=0.9,<=0.19"


# ---- Transformers ---------------------------------------------------------------------------


def test_bitsandbytes_offload_refusal_of_transformers_4_30_is_a_device_oom(
    matcher: Matcher,
) -> None:
    # Vision-CAIR/MiniGPT-4#39 and meta-llama/llama-cookbook#56 (2023): 4.30's modeling_utils
    # prints the refusal over several indented lines; its distinctive one is the offload docs'
    # address. The GPUs could not hold the quantized model (device_oom, not a Hub error).
    line = (
        "                        "
        "https://huggingface.co/docs/transformers/main/en/main_classes/quantization"
        "#offload-between-cpu-and-gpu"
    )
    signature = _signature(matcher, line)
    assert signature.emitter == "transformers" and signature.releases == ">=4.30,<=4.38"
    assert signature.failure_class == "device_oom" and signature.role == "root_cause"
    # 4.46 on print it on one line, naming llm_int8_enable_fp32_cpu_offload: the same class
    current = (
        "ValueError: Some modules are dispatched on the CPU or the disk. Make sure you have "
        "enough GPU RAM to fit the quantized model. If you want to dispatch the model on the CPU "
        "or the disk while keeping these modules in 32-bit, you need to set "
        "`llm_int8_enable_fp32_cpu_offload=True` and pass a custom `device_map` to "
        "`from_pretrained`. Check https://huggingface.co/docs/transformers/main/en/main_classes/"
        "quantization#offload-between-cpu-and-gpu for more details. "
    )
    assert set(_winners(matcher, current).values()) == {"device_oom"}


@pytest.mark.parametrize(
    "line",
    [
        # Duxiaoman-DI/XuanYuan#29 (2024, a GPTQ checkpoint under another file name) and
        # TigerResearch/TigerBot#133 (2023, an exl2 checkpoint): 4.30 to 4.38's wording
        "OSError: Error no file named pytorch_model.bin, tf_model.h5, model.ckpt.index or "
        "flax_model.msgpack found in directory ./Duxiaoman-DI/XuanYuan-6B-Chat-4bit.",
        "OSError: Error no file named pytorch_model.bin, tf_model.h5, model.ckpt.index or "
        "flax_model.msgpack found in directory "
        "/home/ps/app/edison/TigerBot/tigerbot-70b-chat-4bit-exl2.",
    ],
)
def test_a_model_directory_without_weights_is_missing_data(matcher: Matcher, line: str) -> None:
    winners = _winners(matcher, line)
    found = {s.id: s for s in matcher.library.signatures if s.id in winners}
    ours = [s for s in found.values() if s.emitter == "transformers"]
    assert ours and {s.failure_class for s in ours} == {"corrupt_or_missing_data"}
    assert any(s.releases and s.releases.startswith(">=4.30,") for s in ours)


def test_an_unset_special_token_read_by_transformers_4_x_is_not_a_failure(
    matcher: Matcher,
) -> None:
    # artidoro/qlora#63 (2023): logged at ERROR by every 4.x when a script reads
    # tokenizer.pad_token before setting it; the run goes on.
    assert _winners(matcher, "Using pad_token, but it is not set yet.") == {}


# ---- Accelerate -----------------------------------------------------------------------------

_DIFFERENT_DEVICE = (
    "You can't train a model that has been loaded in 8-bit precision on a different device "
    "than the one you're training on. Make sure you loaded the model on the correct device "
    "using for example `device_map={'':torch.cuda.current_device()"
)


@pytest.mark.parametrize(
    ("line", "releases"),
    [
        # yangjianxin1/Firefly#270 (2024): 0.20 to 0.2x join two wordings of the hint (0.18 to
        # 0.34 print the first sentence alike)
        (
            "ValueError: " + _DIFFERENT_DEVICE + "}you're training on. Make sure you loaded the "
            "model on the correct device using for example "
            "`device_map={'':torch.cuda.current_device() or "
            "device_map={'':torch.xpu.current_device()}",
            ">=0.18,<=0.34",
        ),
        # hiyouga/LlamaFactory#1707 (2023-12)
        (
            "ValueError: " + _DIFFERENT_DEVICE + " or device_map={'':torch.xpu.current_device()}",
            ">=0.18,<=0.34",
        ),
        # lrzjason/T2ITrainer#56 (2025)
        (
            _DIFFERENT_DEVICE + "}` or `device_map={'':torch.xpu.current_device()}`",
            ">=0.18,<=0.34",
        ),
    ],
)
def test_an_8bit_model_on_another_gpu_of_accelerate_0_x_is_a_configuration_error(
    matcher: Matcher, line: str, releases: str
) -> None:
    # Accelerate 1.12 on says "8-bit or 4-bit precision"; no catalog read from it matched the
    # 0.x wordings. Their hints differ, their first sentence does not: one signature. The model
    # was loaded on another GPU than the process trains on (device_map='auto' under torchrun):
    # a configuration the line states.
    signature = _signature(matcher, line)
    assert signature.emitter == "accelerate" and signature.releases == releases
    assert signature.failure_class == "framework_config_error" and signature.confidence > 0.35


@pytest.mark.parametrize(
    ("line", "emitter", "releases"),
    [
        # yangjianxin1/Firefly#18 (2023), quoted without its full stop: a model device_map
        # spread over several GPUs; 0.20 on adds "in any distributed mode".
        (
            "ValueError: You can't train a model that has been loaded in 8-bit precision on "
            "multiple devices",
            "accelerate",
            "==0.18",
        ),
        # koa-fin/sep#6 (2024): a quantized model device_map partly offloaded.
        (
            "ValueError: You can't train a model that has been loaded in 8-bit precision with "
            "CPU or disk offload.",
            "accelerate",
            ">=0.18,<=0.34",
        ),
        # vllm-project/vllm#9015 (2024, vLLM 0.6.1): 0.5 to 0.6.2 listed the architectures
        # that support pipeline parallelism; 0.6.6 on name the SupportsPP interface instead.
        (
            "NotImplementedError: Pipeline parallelism is only supported for the following  "
            "architectures: ['AquilaForCausalLM', 'AquilaModel', 'DeepseekV2ForCausalLM', "
            "'GPT2LMHeadModel', 'InternLM2ForCausalLM', 'InternLMForCausalLM', 'InternVLChatModel',"
            " 'JAISLMHeadModel', 'LlamaForCausalLM', 'LLaMAForCausalLM', 'MistralForCausalLM', "
            "'MixtralForCausalLM', 'NemotronForCausalLM', 'Phi3ForCausalLM', 'Qwen2ForCausalLM', "
            "'Qwen2MoeForCausalLM', 'QWenLMHeadModel', 'Qwen2VLForConditionalGeneration'].",
            "vllm",
            "==0.5",
        ),
    ],
)
def test_a_configuration_error_only_older_lines_print_is_read_from_them(
    matcher: Matcher, line: str, emitter: str, releases: str
) -> None:
    signature = _signature(matcher, line)
    assert (signature.emitter, signature.releases) == (emitter, releases)
    assert signature.failure_class == "framework_config_error"


# ---- vLLM -----------------------------------------------------------------------------------


def test_too_few_gpus_for_vllm_0_2s_tensor_parallel_size_is_a_launch_error(
    matcher: Matcher,
) -> None:
    # bentoml/OpenLLM#758 and imoneoi/openchat#117 (2023): vLLM 0.2's ray_utils said "in the
    # cluster"; 0.4 on say "in the placement group" (VITA-MLLM/VITA#42, 2024).
    old = (
        "ValueError: The number of required GPUs exceeds the total number of available GPUs in "
        "the cluster."
    )
    signature = _signature(matcher, old)
    assert signature.emitter == "vllm" and signature.releases == ">=0.2,<=0.4"
    assert signature.failure_class == "launch_config_error"
    placement = (
        "ValueError: The number of required GPUs exceeds the total number of available GPUs in "
        "the placement group."
    )
    winners = _winners(matcher, placement)
    assert set(winners.values()) == {"launch_config_error"}
    assert all(id_.startswith("vllm_cat.") for id_ in winners)


# ---- PyTorch Lightning ----------------------------------------------------------------------


def test_a_misconfiguration_of_lightning_1_9_is_a_configuration_error(matcher: Matcher) -> None:
    # Lightning-AI/pytorch-lightning#16425 (2023-01, 1.9): 2.0 removed training_epoch_end, so
    # no catalog read from 2.x knew the check; its MisconfigurationException names the mistake.
    line = (
        "MisconfigurationException: `training_epoch_end` expects a return of None. HINT: remove "
        "the return statement in `training_epoch_end`."
    )
    signature = _signature(matcher, line)
    assert signature.emitter == "lightning" and signature.releases == "==1.9"
    assert signature.failure_class == "framework_config_error" and signature.confidence <= 0.35


# ---- Ray ------------------------------------------------------------------------------------


def test_ray_processes_that_never_started_on_ray_2_x_are_a_start_up_failure(
    matcher: Matcher,
) -> None:
    # ray-project/ray#50474 (2025, ray.init() on one machine): 2.9 to 2.30's wording. The
    # machine's own raylet and GCS did not come up: no node was lost.
    line = (
        "Exception: The current node timed out during startup. This could happen because some "
        "of the Ray processes failed to startup."
    )
    signature = _signature(matcher, line)
    # Both wordings share their first sentence: one signature spans the lines.
    assert signature.emitter == "ray" and signature.releases == ">=2.9,<=2.60"
    assert signature.failure_class == "rendezvous_failure"
    # ray-project/ray#62883 (2026, Ray 2.55): the current wording, the same class
    current = (
        "Exception: The current node timed out during startup. This could happen because some "
        "of the raylet failed to startup or the GCS has become overloaded."
    )
    assert set(_winners(matcher, current).values()) == {"rendezvous_failure"}


def test_ray_2_9s_version_mismatch_report_is_left_to_the_hand_written_signature(
    matcher: Matcher,
) -> None:
    # The report's second line is not a failure of its own (ray/version_mismatch.yaml's
    # no_match); the catalog's partial rendering of 2.9's report is excluded.
    assert _winners(matcher, "This process on node 10.18.215.196 was started with:") == {}


# ---- Megatron-Core --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        # NVIDIA-NeMo/Speech#11480 (2024, the nemo:24.09 container's Megatron-Core)
        "[rank0]: RuntimeError: world_size (1) is not divisible by 2",
        # NVIDIA-NeMo/Speech#14838 (2025, nemo:25.07): 0.12 to 0.1x say "decoder world_size",
        # 0.17 on "world_size": one signature over both wordings
        "RuntimeError: decoder world_size (4) is not divisible by "
        "expert_tensor_model_pipeline_parallel size (8)",
    ],
)
def test_a_world_size_that_does_not_fit_megatron_cores_parallel_sizes_names_its_release(
    matcher: Matcher, line: str
) -> None:
    winners = _winners(matcher, line)
    found = [s for s in matcher.library.signatures if s.id in winners]
    assert found and {s.failure_class for s in found} == {"framework_config_error"}
    assert {s.releases for s in found} == {">=0.12,<=0.19"}
