"""Real lines NVIDIA NeMo printed in failed runs meet the signatures generated from its source
(catalogs/nemo), its reviewed mapping decides messages as a reviewer would (exp_manager and
AutoResume refusing to resume, unfinished checkpoints, the preemption callbacks' SIGTERM, neural
type checks), the healthy warnings NeMo prints in most runs are not evidence, a message NeMo copies
from Megatron-Core fires Megatron's signature alone, and the extractor reads the failures NeMo
reports at info level or with print().

Every real line below is copied from the public thread named beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from catalogs.core.message import Message
from catalogs.core.render import render_line
from catalogs.nemo.extract import extract
from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_catalog_reads, assert_mapped, catalog_hits, decide

FAMILY = "nemo_cat"
RULES = Path(__file__).resolve().parents[2] / "rules"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/NVIDIA-NeMo/Speech/issues/1272: exp_manager given a Trainer with a logger
        (
            "nemo.utils.exp_manager.LoggerMisconfigurationError: The pytorch lightning trainer that"
            " was passed to exp_manager contained a logger, and name: None was also passed to"
            " exp_manager. If the trainer contains a logger, exp_manager will use"
            " trainer.logger.name, and name passed to exp_manager must be None. You can disable"
            " lighning's trainer from creating a logger by passing logger=False to its"
            " constructor.",
            "framework_config_error",
        ),
    ],
)
def test_a_real_nemo_line_gets_its_class(matcher: Matcher, text: str, failure_class: str) -> None:
    assert_catalog_reads(matcher, text, FAMILY, failure_class)


@pytest.mark.parametrize(
    ("text", "level", "file", "failure_class"),
    [
        # 1.23-2.4 nemo/utils/exp_manager.py: resume_if_exists with nothing to resume from
        (
            "There were no checkpoints found in checkpoint_dir or no checkpoint folder at"
            " checkpoint_dir :{checkpoint_dir}. Cannot resume.",
            "NotFoundError",
            "nemo/utils/exp_manager.py",
            "framework_config_error",
        ),
        # 2.4 nemo/lightning/resume.py: the newest checkpoint's save was cut off
        (
            "Last checkpoint is unfinished and cannot be used to resume the training. Please remove"
            " the checkpoint manually to avoid unexpected cosequences, such as restarting from"
            " scratch.",
            "ValueError",
            "nemo/lightning/resume.py",
            "checkpoint_mismatch",
        ),
        # 2.4 nemo/lightning/pytorch/callbacks/preemption.py (logged at info level)
        (
            "Preemption detected, saving checkpoint and exiting",
            "INFO",
            "nemo/lightning/pytorch/callbacks/preemption.py",
            "preemption",
        ),
        # 1.23 nemo/utils/callbacks/preemption.py (logged at info level)
        (
            "Received SIGTERM, saving checkpoint and exiting",
            "INFO",
            "nemo/utils/callbacks/preemption.py",
            "preemption",
        ),
        # 1.23-2.4 nemo/core/classes/common.py: a module's neural type check
        (
            "Input shape mismatch occured for {name} in module {self.__class__.__name__} : \n"
            "Input shape expected = {type_shape} | \nInput shape found : {value_shape}",
            "TypeError",
            "nemo/core/classes/common.py",
            "shape_or_dtype_error",
        ),
        # 1.23-2.4 nemo/utils/callbacks/nemo_model_checkpoint.py: a Lightning newer than NeMo's
        (
            "Lightning's ModelCheckpoint was updated. NeMoModelCheckpoint will need an update.",
            "AttributeError",
            "nemo/utils/callbacks/nemo_model_checkpoint.py",
            "dependency_error",
        ),
        # 2.1-2.4 nemo/lightning/io/state.py: importing a checkpoint of another variant
        (
            "Additional keys: {keys} in checkpoint but not in model.",
            "RuntimeError",
            "nemo/lightning/io/state.py",
            "checkpoint_mismatch",
        ),
        # 2.4 nemo/collections/llm/gpt/data/utils.py: an index built by another release
        (
            "Version mismatch: Please delete existing '.{__idx_suffix__}' files. Expected version ="
            " {__idx_version__}, but file version = {idx_version}. File path = {idx_fn}",
            "RuntimeError",
            "nemo/collections/llm/gpt/data/utils.py",
            "corrupt_or_missing_data",
        ),
        # a check of the user's own module calls: no setting of the run, a low prior
        (
            "Expected 'loss' in output dict, got {out.keys()}",
            "ValueError",
            "nemo/lightning/pytorch/strategies/megatron_strategy.py",
            "python_exception",
        ),
    ],
)
def test_the_mapping_gives_a_mechanism_its_class(
    text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped("nemo", text, level, file, failure_class)


@pytest.mark.parametrize(
    ("text", "level", "file"),
    [
        # logged at error level, but the run goes on: most torchrun multi-node runs print it
        (
            "You are running multi-node training without SLURM handling the processes. Please note"
            " that this is not tested in NeMo and could result in errors.",
            "ERROR",
            "nemo/utils/exp_manager.py",
        ),
        # the first run of an experiment with resume_ignore_no_checkpoint
        (
            "There were no checkpoints found in checkpoint_dir or no checkpoint folder at"
            " checkpoint_dir :{checkpoint_dir}. Training from scratch.",
            "WARNING",
            "nemo/lightning/resume.py",
        ),
        # an info line about preemption that is not a preemption
        (
            "Preemption is supported only on GPUs, disabling preemption",
            "INFO",
            "nemo/utils/exp_manager.py",
        ),
    ],
)
def test_a_notice_stays_context(text: str, level: str, file: str) -> None:
    assert decide("nemo", text, level, file).disposition == "context"


def test_a_short_phrase_other_programs_print_is_excluded() -> None:
    for text, level in (
        ("{path2file} does not exist", "FileNotFoundError"),
        ("Checkpoint was saved at: {str(path)}", "NotImplementedError"),
        ("Timer not started", "RuntimeError"),
    ):
        decision = decide("nemo", text, level, "nemo/x.py")
        assert decision.disposition == "excluded"
        assert "too generic" in (decision.reason or "")


def test_an_error_nemo_also_prints_as_a_healthy_warning_is_excluded() -> None:
    # 1.23-2.4 megatron_base_model.py raises it; megatron_gpt_model.py logs it at import
    decision = decide(
        "nemo",
        "megatron-core was not found. Please see the NeMo README for installation instructions:"
        " https://github.com/NVIDIA/NeMo#megatron-gpt.",
        "ImportError",
        "nemo/collections/nlp/models/language_modeling/megatron_base_model.py",
    )
    assert decision.disposition == "excluded"
    assert "warning of healthy runs" in (decision.reason or "")


def test_a_healthy_nemo_line_is_not_matched(matcher: Matcher) -> None:
    for line in (
        # github.com/NVIDIA-NeMo/Speech/issues/14259: a first run with AutoResume
        "[NeMo W 2025-07-16 09:08:27 nemo_logging:405] There were no checkpoints found in"
        " checkpoint_dir or no checkpoint folder at checkpoint_dir :/workspace/logs_15_07_curated."
        " Training from scratch.",
        # github.com/NVIDIA-NeMo/Speech/issues/7878
        "[NeMo W 2023-11-11 08:05:28 exp_manager:754] No version folders would be created under"
        " the log folder as 'resume_if_exists' is enabled.",
        # github.com/NVIDIA-NeMo/Speech/issues/7647: an import-time notice of most NeMo 1 runs
        "[NeMo W 2023-10-05 22:24:59 nemo_logging:393] megatron-core was not found. Please see the"
        " NeMo README for installation instructions: https://github.com/NVIDIA/NeMo#megatron-gpt.",
        # github.com/NVIDIA-NeMo/Speech/issues/5017
        "[NeMo W 2022-09-27 17:45:38 optimizers:55] Apex was not found. Using the lamb or"
        " fused_adam optimizer will error out.",
        # github.com/NVIDIA-NeMo/Speech/issues/13234
        "[NeMo W 2025-04-24 00:14:13 ssm:32] The package `megatron.core` was not imported in this"
        " environment which is needed for SSMs.",
        # NeMo's progress lines
        "[NeMo I 2025-03-11 14:02:37 nemo_logger:145] Experiments will be logged at"
        " /results/llama3_8b/2025-03-11_14-02-37",
        "[NeMo I 2025-03-11 14:05:12 model_checkpoint:497] Scheduled async checkpoint save for"
        " /results/llama3_8b/checkpoints/model_name=0--step=999-consumed_samples=64000.0.ckpt",
    ):
        assert not catalog_hits(matcher, line, FAMILY), line


def test_a_message_nemo_copies_from_megatron_fires_megatron_s_signature(matcher: Matcher) -> None:
    # the title of github.com/NVIDIA-NeMo/Speech/issues/14838 (the nemo:25.07 container):
    # nemo/collections/nlp/modules/common/megatron/megatron_init.py prints Megatron-Core's text
    line = (
        "RuntimeError: decoder world_size (4) is not divisible by"
        " expert_tensor_model_pipeline_parallel size (8)"
    )
    assert not catalog_hits(matcher, line, FAMILY)
    assert catalog_hits(matcher, line, "megatron_cat")


def test_the_line_template_prints_the_module_as_nemo_s_logger_does() -> None:
    message = Message("nemo", "2.4", "x", "literal", "nemo/utils/exp_manager.py", 12, "ERROR", "f")
    line = render_line("[NeMo E 2025-03-11 14:02:37 {stem}:{line}] {message}", message, "boom")
    assert line == "[NeMo E 2025-03-11 14:02:37 exp_manager:12] boom"


def test_the_extractor_reads_failures_reported_at_info_level(tmp_path: Path) -> None:
    callbacks = tmp_path / "nemo" / "utils" / "callbacks"
    callbacks.mkdir(parents=True)
    (callbacks / "preemption.py").write_text(
        "from nemo.utils import logging\n"
        "def on_step(e):\n"
        '    logging.info("Preemption requires torch distributed to be initialized")\n'
        '    logging.info("Setting up the trainer")\n'
        '    logging.info("Received SIGTERM, saving checkpoint and exiting")\n'
        '    print(f"Failed to load optimzier state dicts. Errored with {e}")\n'
        '    print("Loading the model")\n'
        '    raise ValueError(f"Cannot resolve optimizer {e}")\n'
    )
    found = {(m.level, m.text, m.style) for m in extract(tmp_path, "2.4")}
    assert found == {
        ("INFO", "Preemption requires torch distributed to be initialized", "literal"),
        ("INFO", "Received SIGTERM, saving checkpoint and exiting", "literal"),
        ("PRINT", "Failed to load optimzier state dicts. Errored with {e}", "fstring"),
        ("ValueError", "Cannot resolve optimizer {e}", "fstring"),
    }


def test_the_catalog_reads_the_release_lines() -> None:
    accounting = json.loads((RULES / FAMILY / "CATALOG.json").read_text())
    assert [row["line"] for row in accounting["releases"]] == ["1.23", "2.1", "2.4"]
    assert all(row["found"] > 0 for row in accounting["releases"])
