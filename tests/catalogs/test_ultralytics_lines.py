"""Real lines Ultralytics YOLO printed in failed runs meet the signatures generated from its source
(catalogs/ultralytics), its reviewed mapping keeps the warnings a healthy run prints as context,
and its extractor reads Ultralytics' own shapes (`emojis(...)` around a raise, the level written
into a warning's text, 8.0's failures reported through `LOGGER.info`).

Every real line below is copied from the public thread named beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from catalogs.ultralytics.extract import extract
from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_catalog_reads, assert_mapped, catalog_hits, decide

FAMILY = "ultralytics_cat"
RULES = Path(__file__).resolve().parents[2] / "rules"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/ultralytics/ultralytics/issues/18323: no val images where the YAML says
        ("RuntimeError: Dataset 'custom_data.yaml' error ❌", "corrupt_or_missing_data"),
        (
            "Note dataset download directory is '/content/datasets'. You can update this in"
            " '/root/.config/Ultralytics/settings.json'",
            "corrupt_or_missing_data",
        ),
        # github.com/JiayuanWang-JW/YOLOv8-multi-task/issues/54
        (
            "RuntimeError: Dataset 'ultralytics/datasets/bdd-multi.yaml' error ❌",
            "corrupt_or_missing_data",
        ),
        # github.com/SunOner/sunone_aimbot/issues/164: device=0 on a CPU-only torch
        (
            "ValueError: Invalid CUDA 'device=0' requested. Use 'device=cpu' or pass valid CUDA"
            " device(s) if available, i.e. 'device=0' or 'device=0,1,2,3' for Multi-GPU.",
            "launch_config_error",
        ),
        # github.com/ultralytics/ultralytics/issues/23308: a key this release does not know
        ("SyntaxError: 'compile' is not a valid YOLO argument.", "framework_config_error"),
        # github.com/ultralytics/ultralytics/issues/16531 (its title): a key with a trailing space
        (
            "SyntaxError: 'momentum ' is not a valid YOLO argument. Similar arguments are i.e."
            " ['momentum=0.937', 'warmup_momentum=0.8'].",
            "framework_config_error",
        ),
        # github.com/ultralytics/ultralytics/issues/18370: a segment model on box-only labels
        (
            "This error can occur when incorrectly training a 'segment' model on a 'detect'"
            " dataset, i.e. 'yolo train model=yolov8n-seg.pt data=coco8.yaml'.",
            "corrupt_or_missing_data",
        ),
        # github.com/THU-MIG/yoloe/issues/92 (an Ultralytics fork): the labels cache holds no label
        (
            "WARNING ⚠️ No labels found in /workspace/data/lvis/labels/val2017.cache, training may"
            " not work correctly. See https://docs.ultralytics.com/datasets for dataset formatting"
            " guidance.",
            "corrupt_or_missing_data",
        ),
    ],
)
def test_a_real_ultralytics_line_gets_its_class(
    matcher: Matcher, text: str, failure_class: str
) -> None:
    assert_catalog_reads(matcher, text, FAMILY, failure_class)


def test_a_missing_labels_warning_is_only_a_low_prior(matcher: Matcher) -> None:
    # github.com/THU-MIG/yoloe/issues/92: training may still start; the error after it decides
    hits = catalog_hits(
        matcher,
        "WARNING ⚠️ No labels found in /workspace/data/lvis/labels/val2017.cache, training may not"
        " work correctly. See https://docs.ultralytics.com/datasets for dataset formatting"
        " guidance.",
        FAMILY,
    )
    assert hits and all(m.signature.confidence <= 0.35 for m in hits)


@pytest.mark.parametrize(
    ("text", "level", "file", "failure_class"),
    [
        # 8.3 ultralytics/utils/torch_utils.py: batch not split evenly over the GPUs of device=
        (
            "'batch={batch}' must be a multiple of GPU count {n}. Try 'batch={batch // n * n}' or"
            " 'batch={batch // n * n + n}', the nearest batch sizes evenly divisible by {n}.",
            "ValueError",
            "ultralytics/utils/torch_utils.py",
            "framework_config_error",
        ),
        # 8.3 ultralytics/engine/trainer.py: the NaN recovery gave up
        (
            "Training failed: NaN persisted for {self.nan_recovery_attempts} epochs",
            "RuntimeError",
            "ultralytics/engine/trainer.py",
            "nan_or_inf",
        ),
        # 8.3 ultralytics/engine/trainer.py: the loss went NaN, the trainer reloads last.pt
        (
            "{reason} detected (attempt {self.nan_recovery_attempts}/3), recovering from"
            " last.pt...",
            "WARNING",
            "ultralytics/engine/trainer.py",
            "nan_or_inf",
        ),
        # 8.3 ultralytics/utils/downloads.py: check_disk_space before a download
        (
            "Insufficient free disk space {free:.1f} GB < {data * sf:.3f} GB required, Please free"
            " {data * sf - free:.1f} GB additional disk space and try again.",
            "MemoryError",
            "ultralytics/utils/downloads.py",
            "disk_full",
        ),
        # 8.3 ultralytics/utils/downloads.py: weights not cached and no network on the node
        (
            "❌  Download failure for {uri}. Environment may be offline.",
            "ConnectionError",
            "ultralytics/utils/downloads.py",
            "corrupt_or_missing_data",
        ),
        # 8.2 ultralytics/data/utils.py: a data YAML whose names and nc disagree
        (
            "{dataset} 'names' length {len(data['names'])} and 'nc: {data['nc']}' must match.",
            "SyntaxError",
            "ultralytics/data/utils.py",
            "corrupt_or_missing_data",
        ),
        # 8.3 ultralytics/data/base.py: an image the dataset lists that OpenCV cannot read
        (
            "Image Not Found {f}",
            "FileNotFoundError",
            "ultralytics/data/base.py",
            "corrupt_or_missing_data",
        ),
    ],
)
def test_the_mapping_gives_a_mechanism_its_class(
    text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped("ultralytics", text, level, file, failure_class)


@pytest.mark.parametrize(
    ("text", "level", "file"),
    [
        # 8.3 ultralytics/utils/checks.py: AMP disabled, training goes on in FP32 (logged as error)
        (
            "{prefix}checks failed. Anomalies were detected with AMP on your system that may lead"
            " to NaN losses or zero-mAP results, so AMP will be disabled during training.",
            "ERROR",
            "ultralytics/utils/checks.py",
        ),
        # 8.3 ultralytics/data/utils.py: one label file left out ("ignoring corrupt image/label")
        (
            "Label class {int(max_cls)} exceeds dataset class count {num_cls}. Possible class"
            " labels are 0-{num_cls - 1}",
            "AssertionError",
            "ultralytics/data/utils.py",
        ),
        # 8.3 ultralytics/data/utils.py: a dataset with a download script, about to download it
        (
            "Dataset '{name}' images not found, missing path '{next(x for x in val)}'",
            "WARNING",
            "ultralytics/data/utils.py",
        ),
        # 8.3 ultralytics/utils/tal.py: the assigner falls back to the CPU
        (
            "CUDA OutOfMemoryError in TaskAlignedAssigner, using CPU",
            "WARNING",
            "ultralytics/utils/tal.py",
        ),
        # 8.3 ultralytics/utils/ops.py: a slow NMS, not a hung collective
        ("NMS time limit {time_limit:.3f}s exceeded", "WARNING", "ultralytics/utils/ops.py"),
        # 8.3 ultralytics/data/dataset.py: the cache could not be written, the run goes on
        (
            "{prefix}Cache directory {path.parent} is not writeable, cache not saved.",
            "WARNING",
            "ultralytics/data/dataset.py",
        ),
    ],
)
def test_a_warning_the_run_goes_on_after_stays_context(text: str, level: str, file: str) -> None:
    assert decide("ultralytics", text, level, file).disposition == "context"


def test_a_healthy_ultralytics_line_is_not_matched(matcher: Matcher) -> None:
    for line in (
        # github.com/ultralytics/ultralytics/issues/3605: a healthy multi-GPU start
        "WARNING ⚠️ 'model' argument is missing. Using default 'model=yolo11n.pt'.",
        "Ultralytics 8.3.74 🚀 Python-3.12.9 torch-2.6.0+cu124 CUDA:0 (Tesla T4, 14918MiB)",
        # github.com/ultralytics/ultralytics/issues/1348: AMP disabled, training went on
        "AMP: checks failed . Anomalies were detected with AMP on your system that may lead to NaN"
        " losses or zero-mAP results, so AMP will be disabled during training.",
        "AMP: checks passed ✅",
        "WARNING ⚠️ 'rect=True' is incompatible with Multi-GPU training, setting 'rect=False'",
        # a first run that downloads coco8 before training
        "WARNING ⚠️ Dataset 'coco8.yaml' images not found, missing path"
        " '/content/datasets/coco8/images/val'",
        "train: Scanning /data/coco8/labels/train... 4 images, 0 backgrounds, 0 corrupt: 100%",
    ):
        assert not catalog_hits(matcher, line, FAMILY), line


def test_the_extractor_reads_ultralytics_shapes(tmp_path: Path) -> None:
    package = tmp_path / "ultralytics"
    (package / "data").mkdir(parents=True)
    (package / "engine").mkdir()
    (package / "utils" / "callbacks").mkdir(parents=True)
    (package / "data" / "utils.py").write_text(
        "def check(d):\n"
        '    raise SyntaxError(emojis(f"{d} key missing ❌."))\n'
        "def warn(p):\n"
        '    LOGGER.warning(f"{p}WARNING ⚠️ cache not saved {p}")\n'
    )
    (package / "engine" / "exporter.py").write_text(
        "def export(prefix, e):\n"
        "    LOGGER.info(f'{prefix} export failure ❌ {e}')\n"
        "    LOGGER.info(f'{prefix} export success ✅ {e}')\n"
    )
    (package / "utils" / "callbacks" / "wb.py").write_text(
        "def on_fit(e):\n    LOGGER.warning(f'WARNING ⚠️ wandb not logging {e}')\n"
    )
    found = {(m.level, m.text) for m in extract(tmp_path, "8.3")}
    assert found == {
        ("SyntaxError", "{d} key missing ❌."),
        ("WARNING", "{p}cache not saved {p}"),
        ("ERROR", "{prefix} export failure ❌ {e}"),
    }


def test_the_catalog_reads_the_release_lines() -> None:
    accounting = json.loads((RULES / FAMILY / "CATALOG.json").read_text())
    assert [row["line"] for row in accounting["releases"]] == ["8.0", "8.2", "8.3"]
    assert all(row["found"] > 0 for row in accounting["releases"])
