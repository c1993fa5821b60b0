"""Real lines TorchRec printed in failed runs meet the signatures generated from its source
(catalogs/torchrec), its reviewed mapping decides the planner's, the sharders' and the batch's
messages as a reviewer would, and its extractor reads the planner's keyword-argument raises.

Every real line below is copied from the public thread named beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from catalogs.torchrec.extract import extract
from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_catalog_reads, assert_mapped, catalog_hits, decide

FAMILY = "torchrec_cat"
RULES = Path(__file__).resolve().parents[2] / "rules"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/meta-pytorch/torchrec/issues/1614: ParameterConstraints that leave a table
        # no compute kernel for its sharding types
        (
            "RuntimeError: No available sharding type and compute kernel combination after"
            " applying user provided constraints for product_table",
            "framework_config_error",
        ),
        # github.com/meta-pytorch/torchrec/pull/4086: per-feature offsets concatenated into a KJT
        (
            "ValueError: The last element of offsets must equal to the number of values, but got"
            " 37 and 156",
            "shape_or_dtype_error",
        ),
        # github.com/meta-pytorch/torchrec/issues/602: the planner chose table-wise sharding for
        # a single EmbeddingBag's sharder
        (
            "RuntimeError: table-wise sharding on a single EmbeddingBag is not supported yet",
            "framework_config_error",
        ),
    ],
)
def test_a_real_torchrec_line_gets_its_class(
    matcher: Matcher, text: str, failure_class: str
) -> None:
    assert_catalog_reads(matcher, text, FAMILY, failure_class)


def test_the_planner_s_no_plan_error_reads_from_its_first_line(matcher: Matcher) -> None:
    # torchrec 1.3 torchrec/distributed/planner/planners.py: the statement, then the
    # "Possible solutions:" list on lines of their own; the first line says what ran out
    storage = (
        "[rank0]: torchrec.distributed.planner.types.PlannerError: Unable to find a plan for this"
        " model because of insufficient storage. "
    )
    assert_catalog_reads(matcher, storage, FAMILY, "device_oom")
    constraints = (
        "torchrec.distributed.planner.types.PlannerError: Unable to find a plan for this model"
        " because of the strict constraints. "
    )
    assert_catalog_reads(matcher, constraints, FAMILY, "framework_config_error")


@pytest.mark.parametrize(
    ("text", "level", "file", "failure_class"),
    [
        # 1.3 torchrec/distributed/planner/partitioners.py: one shard larger than any rank's HBM
        (
            "Shard of size {storage_needed} bytes does not fit on any rank. Device memory cap:"
            " {devices[i].storage}.",
            "PlannerError",
            "torchrec/distributed/planner/partitioners.py",
            "device_oom",
        ),
        # 1.3 torchrec/distributed/planner/storage_reservations.py
        (
            "The reserved topology ({storage_repr_in_gb(reserved_topology.devices[0].storage)})"
            " has negative available hbm storage, after taking into account of the reserved hbm"
            " percentage, the storage for dense modules, and the kjt storages.",
            "PlannerError",
            "torchrec/distributed/planner/storage_reservations.py",
            "device_oom",
        ),
        # 1.3 torchrec/distributed/model_parallel.py: a sharder for another module type
        (
            "Incorrect sharder {type(sharder)} for module type {type(module)}",
            "AssertionError",
            "torchrec/distributed/model_parallel.py",
            "framework_config_error",
        ),
        # 1.3 torchrec/sparse/jagged_tensor_validator.py: lengths and values disagree
        (
            "Sum of lengths must equal the number of values, but got {lengths.sum().item()} and"
            " {values.numel()}",
            "ValueError",
            "torchrec/sparse/jagged_tensor_validator.py",
            "shape_or_dtype_error",
        ),
        # 1.3 torchrec/optim/keyed.py: the optimizer state of another model
        (
            "Different parameter count: {len(state)} vs {len(new_state)}",
            "ValueError",
            "torchrec/optim/keyed.py",
            "checkpoint_mismatch",
        ),
        # 1.3 torchrec/distributed/planner/planners.py: collective_plan outside a process group
        (
            "The default process group is not yet initialized. Please call"
            " torch.distributed.init_process_group() first before invoking this.",
            "AssertionError",
            "torchrec/distributed/planner/planners.py",
            "launch_config_error",
        ),
    ],
)
def test_the_mapping_gives_a_mechanism_its_class(
    text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped("torchrec", text, level, file, failure_class)


def test_an_unexplained_torchrec_error_is_a_low_prior() -> None:
    decision = decide(
        "torchrec",
        "Cannot cast {optimizer_class} to an EmbOptimType",
        "ValueError",
        "torchrec/distributed/utils.py",
    )
    assert decision.disposition == "mapped"
    assert decision.confidence is not None and decision.confidence <= 0.35


def test_a_check_other_programs_word_alike_is_left_out() -> None:
    for text in ("Timeout must be positive", "Process group is not initialized"):
        decision = decide("torchrec", text, "AssertionError", "torchrec/distributed/comm.py")
        assert decision.disposition == "excluded"


def test_the_planner_s_and_the_pipeline_s_warnings_are_context() -> None:
    for text in (
        "No available compute kernels after applying user provided constraints for {name}",
        "Module '{node.target}' will NOT be pipelined, due to input modifications",
    ):
        assert decide("torchrec", text, "WARNING", "torchrec/x.py").disposition == "context"


def test_a_healthy_torchrec_line_is_not_matched(matcher: Matcher) -> None:
    for line in (
        # github.com/meta-pytorch/torchrec/issues/1614: the warning before the error names the
        # table; the error is the evidence
        "No available compute kernels after applying user provided constraints for product_table",
        "INFO:torchrec.distributed.planner.stats:#  --- Planner Statistics ---  #",
        "INFO:torchrec.distributed.planner.stats:# --- Evaluated 1 proposal(s), found 1 possible"
        " plan(s), ran for 0.06s --- #",
    ):
        assert not catalog_hits(matcher, line, FAMILY)


def test_the_extractor_reads_the_planner_s_keyword_raises(tmp_path: Path) -> None:
    planner = tmp_path / "torchrec" / "distributed" / "planner"
    planner.mkdir(parents=True)
    (planner / "planners.py").write_text(
        "def plan(self):\n"
        "    solution = f'Planner evaluated {self._num_proposals} proposals.'\n"
        "    raise PlannerError(\n"
        "        error_type=PlannerErrorType.INSUFFICIENT_STORAGE,\n"
        "        message='Unable to find a plan for this model because of insufficient storage. '\n"
        "        + solution,\n"
        "    )\n"
    )
    found = {(m.level, m.text) for m in extract(tmp_path, "1.3")}
    assert (
        "PlannerError",
        "Unable to find a plan for this model because of insufficient storage. Planner evaluated"
        " {self._num_proposals} proposals.",
    ) in found


def test_the_catalog_reads_the_release_lines() -> None:
    accounting = json.loads((RULES / FAMILY / "CATALOG.json").read_text())
    assert [row["line"] for row in accounting["releases"]] == ["0.6", "0.8", "1.3"]
    assert all(row["found"] > 0 for row in accounting["releases"])
