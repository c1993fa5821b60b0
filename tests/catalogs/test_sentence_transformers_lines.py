"""Real lines sentence-transformers printed in failed runs meet the signatures generated from its
source (catalogs/sentence_transformers), its reviewed mapping decides messages as a reviewer
would (a dataset whose columns do not fit the loss, a model refused without trust_remote_code,
a model that needs other package versions), its warnings about a healthy run stay context, and
its extractor reads the reports it assembles as a list of lines.

Every real line below is copied from the public thread named beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from catalogs.sentence_transformers.extract import extract
from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_catalog_reads, assert_mapped, catalog_hits, decide

FAMILY = "sentence_transformers_cat"
EMITTER = "sentence_transformers"
RULES = Path(__file__).resolve().parents[2] / "rules"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/huggingface/sentence-transformers/issues/3022: CachedGISTEmbedLoss given five
        # negative columns (2.7-3.x take anchor, positive and at most one negative)
        ("ValueError: Expected 2 or 3 embeddings, got 7", "data_preprocessing_error"),
        # github.com/huggingface/sentence-transformers/issues/3355: a DatasetDict of streams
        (
            "ValueError: Sentence Transformers is not compatible with a DatasetDict containing an"
            " IterableDataset.",
            "framework_config_error",
        ),
        # github.com/sem2vec/sem2vec-SE/issues/1: a local model directory that was never created
        ("ValueError: Path ./bert/FoBERT2-SS not found", "corrupt_or_missing_data"),
    ],
)
def test_a_real_sentence_transformers_line_gets_its_class(
    matcher: Matcher, text: str, failure_class: str
) -> None:
    assert_catalog_reads(matcher, text, FAMILY, failure_class)


@pytest.mark.parametrize(
    ("text", "level", "file", "failure_class"),
    [
        # 6.0 sentence_transformers/cross_encoder/losses/mse.py: an extra column in the dataset
        (
            "MSELoss expects a dataset with two non-label columns, but got a dataset with"
            " {len(inputs)} columns.",
            "ValueError",
            "sentence_transformers/cross_encoder/losses/mse.py",
            "data_preprocessing_error",
        ),
        # 6.0 sentence_transformers/base/trainer.py: a column name the trainer reserves
        (
            "The following column names are invalid in your {dataset_name + ' ' if dataset_name"
            " else ''}dataset: {list(overlap)}. Avoid using these column names, as they are"
            " reserved for internal use.",
            "ValueError",
            "sentence_transformers/base/trainer.py",
            "data_preprocessing_error",
        ),
        # 6.0 sentence_transformers/util/misc.py: custom module code, no trust_remote_code
        (
            "The model {model_name_or_path} references the module class {class_ref!r}, which is"
            " not part of Sentence Transformers. Importing it executes third-party code. You can"
            " inspect the repository content at {location}.\nPlease pass the argument"
            " `trust_remote_code=True` to allow custom code to be run.",
            "ValueError",
            "sentence_transformers/util/misc.py",
            "framework_config_error",
        ),
        # 6.0 sentence_transformers/util/environment.py: the versions a model declares it needs
        (
            "The model {source!r} requires:",
            "ImportError",
            "sentence_transformers/util/environment.py",
            "dependency_error",
        ),
        # 5.7 sentence_transformers/sentence_transformer/losses/matryoshka.py
        (
            "Dimensions in matryoshka_dims cannot exceed the model's embedding dimension of"
            " {model_embedding_dim}.",
            "ValueError",
            "sentence_transformers/sentence_transformer/losses/matryoshka.py",
            "framework_config_error",
        ),
        # 6.0 sentence_transformers/base/modules/module.py: a model directory without weights
        (
            "Could not find 'model.safetensors' or 'pytorch_model.bin' in {model_name_or_path}.",
            "ValueError",
            "sentence_transformers/base/modules/module.py",
            "corrupt_or_missing_data",
        ),
        # 6.0 sentence_transformers/sparse_encoder/modules/splade_pooling.py: logged, then re-raised
        (
            "Ran out of memory during SpladePooling. Consider setting or decreasing the"
            " 'chunk_size' parameter.",
            "WARNING",
            "sentence_transformers/sparse_encoder/modules/splade_pooling.py",
            "device_oom",
        ),
    ],
)
def test_the_mapping_gives_a_mechanism_its_class(
    text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped(EMITTER, text, level, file, failure_class)


@pytest.mark.parametrize(
    ("text", "level"),
    [
        # a plain Hugging Face model loaded as a SentenceTransformer: mean pooling is added
        (
            "No sentence-transformers model found with name {model_name_or_path}. Creating a new"
            " one with mean pooling.",
            "WARNING",
        ),
        # gathering across devices in a single-process run returns the local tensor
        (
            "Trying to gather while torch.distributed is not available or has not been"
            " initialized, returning the original (local) tensor. This is expected if you are"
            " only using one GPU; consider not using gathering to remove this warning.",
            "WARNING",
        ),
        # saving goes on without the model card
        (
            "Error while generating model card:\n{traceback.format_exc()}Consider opening an issue"
            " on https://github.com/huggingface/sentence-transformers/issues with this"
            " traceback.\nSkipping model card creation.",
            "ERROR",
        ),
    ],
)
def test_a_notice_of_a_healthy_run_is_not_a_failure(text: str, level: str) -> None:
    decision = decide(EMITTER, text, level, "sentence_transformers/base/model.py")
    assert decision.disposition == "context"


def test_a_healthy_sentence_transformers_line_is_not_matched(matcher: Matcher) -> None:
    for line in (
        # github.com/AnswerDotAI/ModernBERT/issues/168: a base model given mean pooling
        "No sentence-transformers model found with name answerdotai/ModernBERT-base. Creating a"
        " new one with mean pooling.",
        "{'loss': 1.2034, 'grad_norm': 8.51, 'learning_rate': 4.8e-05, 'epoch': 0.12}",
        "Batches: 100%|██████████| 32/32 [00:03<00:00,  9.87it/s]",
        "08/06/2025 14:05:42 - INFO - sentence_transformers.SentenceTransformer - Use pytorch"
        " device_name: cuda:0",
    ):
        assert not catalog_hits(matcher, line, FAMILY)


def test_the_extractor_reads_a_report_assembled_as_lines(tmp_path: Path) -> None:
    package = tmp_path / "sentence_transformers"
    package.mkdir()
    (package / "module.py").write_text(
        "def load(model, missing, source):\n"
        '    error_lines = [f"Error(s) in loading state_dict for {model.__class__.__name__}:"]\n'
        "    if missing:\n"
        '        error_lines.append(f"    Missing key(s) in state_dict: {missing}")\n'
        '    raise RuntimeError("\\n".join(error_lines))\n'
        "\n"
        "def check(source, unmet):\n"
        '    lines = [f"The model {source!r} requires:" if source else "This model requires:"]\n'
        '    raise ImportError("\\n".join(lines))\n'
        "\n"
        "def prompts(missing):\n"
        '    error_msg = ""\n'
        '    error_msg += f"The following datasets are missing query prompts: {missing}\\n"\n'
        "    raise ValueError(error_msg.strip())\n",
        encoding="utf-8",
    )
    found = {(m.level, m.text) for m in extract(tmp_path, "6.0")}
    state_dict = "Error(s) in loading state_dict for {model.__class__.__name__}:"
    assert ("RuntimeError", state_dict) in found
    assert ("ImportError", "The model {source!r} requires:") in found
    assert ("ImportError", "This model requires:") in found
    assert (
        "ValueError",
        "The following datasets are missing query prompts: {missing}\n",
    ) in found


def test_the_catalog_reads_the_release_lines() -> None:
    accounting = json.loads((RULES / FAMILY / "CATALOG.json").read_text())
    assert [row["line"] for row in accounting["releases"]] == ["2.7", "3.4", "5.7", "6.0"]
    assert all(row["found"] > 0 for row in accounting["releases"])
