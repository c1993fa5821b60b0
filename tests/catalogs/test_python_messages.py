"""The Python frameworks' extractor finds each failure message as its source writes it.

Each snippet is the statement that prints a real message, as the named release writes it
(message text unchanged); the assertions say which text, style and level the catalog records.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from catalogs.python_messages import Found, in_scope, scan

CATALOGS = Path(__file__).resolve().parents[2] / "catalogs"
CONFIG_CHECKS = ("megatron/training/arguments.py",)


def _found(tmp_path: Path, source: str, rel: str = "pkg/mod.py") -> list[Found]:
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source, encoding="utf-8")
    return list(scan(tmp_path, ("pkg/",)))


def test_an_fstring_raise_keeps_literal_text_and_each_expression(tmp_path: Path) -> None:
    # vllm 0.33 vllm/v1/engine/utils.py
    source = (
        "def f(user_assigned_gpu_ids, local_dp_rank, start, stop):\n"
        "    raise ValueError(\n"
        '        f"--device-ids provides {len(user_assigned_gpu_ids)} devices, but DP rank "\n'
        '        f"{local_dp_rank} needs devices [{start}, {stop})"\n'
        "    )\n"
    )
    [found] = _found(tmp_path, source)
    assert found.style == "fstring"
    assert found.level == "ValueError"
    assert found.function == "f"
    assert found.text == (
        "--device-ids provides {len(user_assigned_gpu_ids)} devices, but DP rank "
        "{local_dp_rank} needs devices [{start}, {stop})"
    )


def test_a_logger_call_with_arguments_is_a_printf_format(tmp_path: Path) -> None:
    # vllm 0.33 vllm/platforms/rocm.py
    [found] = _found(tmp_path, 'logger.warning("Failed to import from amdsmi with %r", e)\n')
    assert (found.text, found.style, found.level) == (
        "Failed to import from amdsmi with %r",
        "printf",
        "WARNING",
    )


def test_percent_and_format_operators_set_the_style(tmp_path: Path) -> None:
    # deepspeed 0.19 deepspeed/runtime/engine.py, ray 2.60 ray/_private/utils.py
    source = (
        'raise ValueError("Unknown optimizer type %s" % name)\n'
        'raise RuntimeError("Failed to connect to GCS at {}".format(address))\n'
    )
    percent, brace = _found(tmp_path, source)
    assert (percent.text, percent.style) == ("Unknown optimizer type %s", "printf")
    assert (brace.text, brace.style) == ("Failed to connect to GCS at {}", "brace")


def test_a_message_built_in_a_variable_is_resolved_within_its_function(tmp_path: Path) -> None:
    source = (
        "def load(path):\n"
        '    msg = f"Checkpoint {path} does not exist"\n'
        '    msg += ". Check the --load argument."\n'
        "    raise FileNotFoundError(msg)\n"
        "def other():\n"
        "    raise ValueError(msg)\n"  # another function's variable is not resolved
    )
    [found] = _found(tmp_path, source)
    assert found.text == "Checkpoint {path} does not exist. Check the --load argument."
    assert found.level == "FileNotFoundError"


def test_literal_braces_of_an_fstring_are_doubled(tmp_path: Path) -> None:
    [found] = _found(tmp_path, 'raise ValueError(f"expected {{a, b}} got {x}")\n')
    assert found.text == "expected {{a, b}} got {x}"


def test_megatron_and_deepspeed_level_helpers_are_read(tmp_path: Path) -> None:
    # megatron core log_single_rank; deepspeed log_dist with a level; below WARNING is not kept
    source = (
        'log_single_rank(logger, logging.WARNING, f"Overwriting {path}")\n'
        'log_dist("Bad hostfile text", ranks=[0], level=logging.ERROR)\n'
        'log_dist("step done", ranks=[0], level=logging.INFO)\n'
        'logger.log(logging.ERROR, "Failed saving model checkpoint")\n'
    )
    levels = [(f.text, f.level) for f in _found(tmp_path, source)]
    assert levels == [
        ("Overwriting {path}", "WARNING"),
        ("Bad hostfile text", "ERROR"),
        ("Failed saving model checkpoint", "ERROR"),
    ]


def test_asserts_count_in_the_configuration_checks_and_where_they_state_a_requirement(
    tmp_path: Path,
) -> None:
    # megatron core_v0.19 megatron/training/arguments.py vs. an internal invariant elsewhere;
    # nanotron's pipeline engine (parallel/pipeline_parallel/engine.py) checks the schedule
    # against the settings outside any configuration file
    (tmp_path / "megatron/training").mkdir(parents=True)
    (tmp_path / "megatron/core").mkdir(parents=True)
    (tmp_path / "megatron/training/arguments.py").write_text(
        'assert args.num_layers is not None, "num_layers must be specified"\n'
    )
    (tmp_path / "megatron/core/buffer.py").write_text(
        'assert x, "bucket is not ready"\n'
        "assert n >= pp - 1, (\n"
        '    f"Number of microbatches ({n}) must be at least PP_SIZE-1={pp - 1} when using "\n'
        '    "the OneForwardOneBackwardPipelineEngine"\n'
        ")\n"
    )
    (tmp_path / "megatron/core/tests").mkdir()
    (tmp_path / "megatron/core/tests/test_x.py").write_text('raise ValueError("in a test")\n')
    assert len(list(scan(tmp_path, ("megatron/",)))) == 3
    kept = [f for f in scan(tmp_path, ("megatron/",)) if in_scope(f, CONFIG_CHECKS)]
    assert [f.text for f in kept] == [
        "Number of microbatches ({n}) must be at least PP_SIZE-1={pp - 1} when using the "
        "OneForwardOneBackwardPipelineEngine",
        "num_layers must be specified",
    ]


def test_plain_values_and_calls_without_literal_text_are_not_messages(tmp_path: Path) -> None:
    source = "raise ValueError(err)\nraise RuntimeError(str(e))\nlogger.error(e)\n"
    assert _found(tmp_path, source) == []


def _tgi() -> object:
    spec = importlib.util.spec_from_file_location("tgi_extract", CATALOGS / "tgi/extract.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("rust", "text", "style", "level"),
    [
        # text-generation-inference v3.3.7 launcher/src/main.rs
        (
            'tracing::error!("Shard process was signaled to shutdown with signal {signal}");',
            "Shard process was signaled to shutdown with signal {signal}",
            "fmt",
            "ERROR",
        ),
        ('    #[error("Shard cannot start")]', "Shard cannot start", "literal", "ERROR"),
        (
            'tracing::warn!(\n        "Bitsandbytes is deprecated, use `eetq` instead"\n    );',
            "Bitsandbytes is deprecated, use `eetq` instead",
            "literal",
            "WARN",
        ),
        (
            '.expect("Unexpected tokenization failure")',
            "Unexpected tokenization failure",
            "literal",
            "panic",
        ),
    ],
)
def test_tgi_rust_messages(tmp_path: Path, rust: str, text: str, style: str, level: str) -> None:
    (tmp_path / "launcher/src").mkdir(parents=True)
    (tmp_path / "launcher/src/main.rs").write_text(f"fn run() {{\n{rust}\n}}\n")
    [(found_text, found_style, file, _line, found_level, function)] = _tgi().scan_rust(tmp_path)  # type: ignore[attr-defined]
    assert (found_text, found_style, found_level) == (text, style, level)
    assert (file, function) == ("launcher/src/main.rs", "run")


def test_an_emitter_s_own_warning_helper_is_read_only_when_its_extract_names_it(
    tmp_path: Path,
) -> None:
    # lightning 2.6 src/pytorch_lightning/trainer/connectors/data_connector.py
    source = (
        "def _check_dataloader_iterable(name, upper_bound):\n"
        "    rank_zero_warn(\n"
        "        f\"The '{name}' does not have many workers which may be a bottleneck. Consider\"\n"
        '        f" increasing the value of the `num_workers` argument` to"\n'
        '        f" `num_workers={upper_bound}` in the `DataLoader` to improve performance.",\n'
        "        category=PossibleUserWarning,\n"
        "    )\n"
    )
    path = tmp_path / "pkg" / "mod.py"
    path.parent.mkdir(parents=True)
    path.write_text(source, encoding="utf-8")
    assert list(scan(tmp_path, ("pkg/",))) == []
    [found] = scan(tmp_path, ("pkg/",), named={"rank_zero_warn": "WARNING"})
    assert (found.text, found.style, found.level) == (
        "The '{name}' does not have many workers which may be a bottleneck. Consider increasing"
        " the value of the `num_workers` argument` to `num_workers={upper_bound}` in the"
        " `DataLoader` to improve performance.",
        "fstring",
        "WARNING",
    )
