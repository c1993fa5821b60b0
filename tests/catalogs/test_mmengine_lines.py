"""Real lines OpenMMLab MMEngine printed in failed runs meet the signatures generated from its
source (catalogs/mmengine), its reviewed mapping decides messages as a reviewer would (a config
`type` no registry holds, custom_imports that do not import, a pipeline that returns no sample,
resuming on another number of GPUs), MMLogger's healthy lines and the load_state_dict report that
every run from a pretrained backbone prints are not evidence, and the extractor reads the level
`print_log` is called with.

Every real line below is copied from the public thread named beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from catalogs.mmengine.extract import extract
from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_catalog_reads, assert_mapped, catalog_hits, decide

FAMILY = "mmengine_cat"
RULES = Path(__file__).resolve().parents[2] / "rules"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/open-mmlab/mmdetection/issues/11762: 0.10's "<scope>::<registry>" wording
        (
            "KeyError: 'Mask2Former is not in the mmengine::model registry. Please check whether"
            " the value of `Mask2Former` is correct or it was registered as expected. More details"
            " can be found at https://mmengine.readthedocs.io/en/latest/advanced_tutorials/"
            "config.html#import-the-custom-module'",
            "framework_config_error",
        ),
        # github.com/open-mmlab/mmcv/issues/2763: 0.7's wording (the registry's name alone)
        (
            "KeyError: 'FastRCNN is not in the model registry. Please check whether the value of"
            " `FastRCNN` is correct or it was registered as expected. More details can be found at"
            " https://mmengine.readthedocs.io/en/latest/advanced_tutorials/config.html"
            "#import-the-custom-module'",
            "framework_config_error",
        ),
        # github.com/lxtGH/OMG-Seg/issues/65: the pipeline returned no sample 1000 times
        (
            "Exception: Cannot find valid image after 1000! Please check your image path and"
            " pipeline",
            "corrupt_or_missing_data",
        ),
        # github.com/AILab-CVC/YOLO-World/issues/266: custom_imports that do not import
        (
            "ImportError: Failed to import custom modules from {'imports': ['yolo_world'],"
            " 'allow_failed_imports': False}, the current sys.path is:",
            "dependency_error",
        ),
        (
            "You should set `PYTHONPATH` to make `sys.path` include the directory which contains"
            " your custom module",
            "dependency_error",
        ),
    ],
)
def test_a_real_mmengine_line_gets_its_class(
    matcher: Matcher, text: str, failure_class: str
) -> None:
    assert_catalog_reads(matcher, text, FAMILY, failure_class)


@pytest.mark.parametrize(
    ("text", "level", "file", "failure_class"),
    [
        # 0.10.3 mmengine/runner/runner.py: resuming on another number of GPUs, auto_scale_lr on
        (
            "Number of GPUs used for current experiment is not consistent with the checkpoint"
            " being resumed from. This will result in poor performance due to the learning rate."
            " You must set the `auto_scale_lr` parameter for Runner and make"
            ' `auto_scale_lr["enable"]=True`.',
            "RuntimeError",
            "mmengine/runner/runner.py",
            "launch_config_error",
        ),
        # 0.10.7 mmengine/dist/dist.py: evaluation results gathered through a node-local tmpdir
        (
            "{tmpdir} is not an shared directory for rank {i}, please make sure {tmpdir} is a"
            " shared directory for all ranks!",
            "FileNotFoundError",
            "mmengine/dist/dist.py",
            "launch_config_error",
        ),
        # 0.10.7 mmengine/model/utils.py: detect_anomalous_params naming an unused parameter
        (
            "{n} with shape {p.size()} is not in the computational graph \n",
            "ERROR",
            "mmengine/model/utils.py",
            "ddp_usage_error",
        ),
        # 0.10.7 mmengine/config/config.py: a config that reads an unset environment variable
        (
            "`{var_name}` cannot be found in `os.environ`. Please set `{var_name}` in environment"
            " or give a default value.",
            "KeyError",
            "mmengine/config/config.py",
            "launch_config_error",
        ),
        # 0.10.7 mmengine/hooks/checkpoint_hook.py via evaluator/utils.py: save_best names a
        # metric the evaluator does not return
        (
            'The indicator "{indicator}" can not match any metric in {list(metrics.keys())}',
            "ValueError",
            "mmengine/evaluator/utils.py",
            "framework_config_error",
        ),
        # 0.10.7 mmengine/runner/amp.py: bfloat16 autocast on a GPU older than Ampere
        (
            "Current CUDA Device does not support bfloat16. Please switch dtype to float16.",
            "RuntimeError",
            "mmengine/runner/amp.py",
            "unsupported_gpu_arch",
        ),
        # 0.7.4 mmengine/runner/checkpoint.py: a file that holds no state_dict
        (
            "No state_dict found in checkpoint file {filename}",
            "RuntimeError",
            "mmengine/runner/checkpoint.py",
            "checkpoint_mismatch",
        ),
    ],
)
def test_the_mapping_gives_a_mechanism_its_class(
    text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped("mmengine", text, level, file, failure_class)


@pytest.mark.parametrize("level", ["WARNING", "RuntimeError"])
def test_the_state_dict_report_of_a_pretrained_backbone_is_not_evidence(level: str) -> None:
    # 0.10.7 mmengine/runner/checkpoint.py load_state_dict: the same pieces are logged as a
    # WARNING (strict=False: init_cfg Pretrained, load_from) and raised with strict=True
    for text in (
        "The model and loaded state dict do not match exactly\n",
        "unexpected key in source state_dict: {', '.join(unexpected_keys)}\n",
        "missing keys in source state_dict: {', '.join(missing_keys)}\n",
    ):
        decision = decide("mmengine", text, level, "mmengine/runner/checkpoint.py")
        assert decision.disposition == "context"


def test_registry_fallback_warnings_are_context() -> None:
    # 0.10.7 mmengine/registry/registry.py: a warning the run goes on after
    decision = decide(
        "mmengine",
        'Failed to search registry with scope "{scope_name}" in the "{root.name}" registry tree.'
        ' As a workaround, the current "{self.name}" registry in "{self.scope}" is used to build'
        " instance.",
        "WARNING",
        "mmengine/registry/registry.py",
    )
    assert decision.disposition == "context"


def test_a_healthy_mmengine_line_is_not_matched(matcher: Matcher) -> None:
    for line in (
        # MMLogger's training and checkpoint lines (issue-open-mmlab-mmpretrain-1632's log)
        "2023/06/09 22:53:31 - mmengine - INFO - Epoch(train) [156][300/351] lr: 2.3675e-03"
        " eta: 5 days, 23:17:30 time: 1.0139 data_time: 0.0039 memory: 48596 loss: 0.4647",
        "06/03 14:21:07 - mmengine - INFO - Saving checkpoint at 12 epochs",
        "06/03 14:21:07 - mmengine - INFO - Load checkpoint from"
        " work_dirs/mask-rcnn_r50_fpn_1x_coco/epoch_12.pth",
        # the harmless report of a pretrained backbone loaded with strict=False
        "06/03 14:21:07 - mmengine - WARNING - The model and loaded state dict do not match"
        " exactly",
        "unexpected key in source state_dict: fc.weight, fc.bias",
    ):
        assert not catalog_hits(matcher, line, FAMILY)


def test_the_extractor_reads_print_log_at_its_level(tmp_path: Path) -> None:
    package = tmp_path / "mmengine"
    package.mkdir()
    (package / "hooks.py").write_text(
        "import logging\n"
        "from mmengine.logging import print_log\n"
        "def f(runner, name, strict):\n"
        "    print_log(f'The resumed {name} does not fit', logger='current',"
        " level=logging.WARNING)\n"
        "    print_log('There is no `ema_state_dict` in checkpoint.', 'current', logging.ERROR)\n"
        "    print_log('Did not find last_checkpoint to be resumed.')\n"
        "    print_log(f'Loads checkpoint from path: {name}', logger='current')\n"
        "    print_log('registry search', logger='current', level=logging.DEBUG)\n"
        "    err_msg = []\n"
        "    err_msg.append(f'missing keys in source state_dict: {name}')\n"
        "    err_msg.insert(0, 'The model and loaded state dict do not match exactly')\n"
        "    err_msg = '\\n'.join(err_msg)\n"
        "    if strict:\n"
        "        raise RuntimeError(err_msg)\n"
        "    print_log(err_msg, logger='current', level=logging.WARNING)\n"
    )
    found = {(m.level, m.text) for m in extract(tmp_path, "0.10.7")}
    assert found == {
        ("WARNING", "The resumed {name} does not fit"),
        ("ERROR", "There is no `ema_state_dict` in checkpoint."),
        # an INFO print_log is read when it reports a failure, not when it reports progress
        ("INFO", "Did not find last_checkpoint to be resumed."),
        ("RuntimeError", "missing keys in source state_dict: {name}"),
        ("RuntimeError", "The model and loaded state dict do not match exactly"),
        ("WARNING", "missing keys in source state_dict: {name}"),
        ("WARNING", "The model and loaded state dict do not match exactly"),
    }


def test_the_catalog_reads_the_release_lines() -> None:
    accounting = json.loads((RULES / FAMILY / "CATALOG.json").read_text())
    assert [row["line"] for row in accounting["releases"]] == ["0.7", "0.10.3", "0.10.7"]
    assert all(row["found"] > 0 for row in accounting["releases"])
