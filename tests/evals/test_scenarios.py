"""Scenarios resolve deterministically into plans whose labels follow the taxonomy."""

from __future__ import annotations

from pathlib import Path

import pytest

from denpex.taxonomy import classes
from evals.inject.plan import Plan
from evals.inject.scenarios import (
    SCENARIOS,
    Action,
    Launcher,
    RankChoice,
    choose,
    originating_rank,
    resolve,
    scenario_seed,
)

REQUIRED = {
    "process_killed",
    "collective_timeout",
    "collective_mismatch",
    "python_exception",
    "host_oom",
    "nan_or_inf",
    "dataloader_worker_died",
    "shm_exhausted",
    "rendezvous_failure",
    "checkpoint_mismatch",
    "disk_full",
    "preemption",
}


def test_there_are_at_least_twenty_scenarios_with_unique_ids() -> None:
    ids = [scenario.id for scenario in SCENARIOS]
    assert len(ids) >= 20
    assert len(set(ids)) == len(ids)


def test_the_brief_s_failure_kinds_and_clean_runs_are_all_covered() -> None:
    covered = {scenario.failure_class for scenario in SCENARIOS}
    assert covered >= REQUIRED
    assert sum(scenario.failure_class is None for scenario in SCENARIOS) >= 2


def test_every_launcher_is_used() -> None:
    assert {scenario.launcher for scenario in SCENARIOS} == set(Launcher)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.id)
def test_every_label_is_a_taxonomy_class(scenario) -> None:
    assert scenario.failure_class is None or scenario.failure_class in classes()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.id)
def test_resolution_is_deterministic_for_a_seed(scenario) -> None:
    assert choose(scenario, 17) == choose(scenario, 17)
    assert scenario_seed(17, scenario.id) == scenario_seed(17, scenario.id)


def test_different_base_seeds_vary_the_choices() -> None:
    first = [choose(scenario, 17) for scenario in SCENARIOS]
    second = [choose(scenario, 18) for scenario in SCENARIOS]
    assert first != second


@pytest.mark.parametrize("seed", [0, 17, 12345])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.id)
def test_the_faulty_rank_respects_the_scenario_s_constraint(scenario, seed) -> None:
    resolved = choose(scenario, seed)
    assert 0 <= resolved.fault_rank < resolved.world_size
    assert resolved.world_size in scenario.world_sizes
    if scenario.rank_choice is RankChoice.ZERO:
        assert resolved.fault_rank == 0
    if scenario.rank_choice is RankChoice.NONZERO:
        assert resolved.fault_rank != 0


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.id)
def test_whole_job_events_and_clean_runs_have_no_originating_rank(scenario) -> None:
    origin = originating_rank(scenario, choose(scenario, 17))
    if not scenario.expect_failure or scenario.action is Action.TERMINATE_JOB:
        assert origin is None
    if scenario.expect_failure and scenario.rank_originates:
        assert origin == choose(scenario, 17).fault_rank


def test_scheduler_events_write_a_simulated_slurm_reason() -> None:
    terminated = [s for s in SCENARIOS if s.action is Action.TERMINATE_JOB]
    assert {s.failure_class for s in terminated} >= {"preemption", "time_limit"}
    assert all(s.slurm_reason is not None and not s.rank_originates for s in terminated)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.id)
def test_a_plan_survives_its_json_round_trip(scenario, tmp_path: Path) -> None:
    plan = resolve(scenario, 17, str(tmp_path), 29500)
    plan.dump(tmp_path / "plan.json")
    assert Plan.load(tmp_path / "plan.json") == plan
    assert plan.steps > plan.fault_step
    assert plan.declared_world_size >= plan.world_size
