"""Hardware correlation and the isolation plan, on real dumps laid out per host.

The dumps are the real `withheld_one` and `stopped` runs, copied under host directories, which
is how the evidence states where each rank ran. The kernel records are real lines from the
signature library's examples (xid.79, kernel.oom_killed_process) in journalctl's short-iso
framing; their time is placed at the hang's onset or far from it. Those records are constructed
for these tests, since a CPU machine cannot produce an Xid: the scenarios are labelled, the
wording is what the driver and kernel print.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from denpex.hang.isolation import plan_isolation
from denpex.hang.models import HangReport, Scheduler
from denpex.hang_view import HangRequest, hang_from_paths
from tests.conftest import REPO
from tests.hang.conftest import case_dir

# `hang_from_paths` with no matcher takes the library this process compiled: made from the
# session's cache (`compiled_once`), not parsed and compiled afresh without one (a minute).
pytestmark = pytest.mark.usefixtures("compiled_once")

XID_79 = (
    "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
)
OOM_KILL = (
    "Out of memory: Killed process 1234 (python) total-vm:123456789kB, anon-rss:98765432kB, "
    "file-rss:1234kB, shmem-rss:0kB, UID:1000 pgtables:234567kB oom_score_adj:0"
)
HOSTS = {0: "node01", 1: "node01", 2: "node02", 3: "node02"}


def _onset(case: str, seq: int = 6) -> float:
    """When the peers entered the stuck collective, from rank 0's real dump."""
    dump = pickle.loads((case_dir(case) / "dumps" / "fr_dump_0").read_bytes())
    created = next(e["time_created_ns"] for e in dump["entries"] if e["collective_seq_id"] == seq)
    return created / 1e9


def _lay_out(tmp_path: Path, case: str) -> Path:
    """The case's dumps under the host each rank ran on; capture times beside them."""
    source = case_dir(case)
    for dump in (source / "dumps").iterdir():
        rank = int(dump.name.rsplit("_", 1)[1])
        target = tmp_path / "job" / HOSTS[rank] / dump.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(dump.read_bytes())
    (tmp_path / "capture_times.json").write_text((source / "capture_times.json").read_text())
    return tmp_path / "job"


def _kernel_line(job: Path, host: str, when: float, message: str) -> None:
    stamp = datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%S+0000")
    log = job / host / "kern.log"
    with log.open("a") as handle:
        handle.write(f"{stamp} {host} kernel: {message}\n")


def _triage(job: Path, scheduler: Scheduler | None = Scheduler.slurm, **extra) -> HangReport:
    return hang_from_paths(
        HangRequest(
            paths=[str(job)],
            scheduler=scheduler,
            capture_times_file=job.parent / "capture_times.json",
            **extra,
        )
    )


def test_an_xid_on_the_culprits_host_at_the_hang_raises_it_and_yields_a_drain_plan(
    tmp_path,
) -> None:
    job = _lay_out(tmp_path, "withheld_one")
    _kernel_line(job, "node02", _onset("withheld_one") - 2, XID_79)
    report = _triage(job)
    best = report.candidates[0]
    assert best.kind.value == "never_entered" and best.ranks == [2]
    assert best.hosts == ["node02"]
    assert best.confidence > 0.85, "support raises the prior"
    assert [s.signature_id for s in best.support if s.counted] == ["xid.79"]
    plan = report.isolation_plan
    assert plan is not None and plan.hosts == ["node02"] and plan.executed is False
    assert plan.commands == [
        'scontrol update NodeName=node02 State=DRAIN Reason="denpex: xid.79 on the host of a '
        'never_entered rank, pg 0 seq 6"'
    ]


def test_kubernetes_gets_cordon_and_drain_ignoring_daemonsets(tmp_path) -> None:
    job = _lay_out(tmp_path, "withheld_one")
    _kernel_line(job, "node02", _onset("withheld_one"), XID_79)
    plan = _triage(job, Scheduler.kubernetes).isolation_plan
    assert plan is not None
    assert plan.commands == ["kubectl cordon node02", "kubectl drain node02 --ignore-daemonsets"]


def test_the_plan_is_printed_never_executed(tmp_path, monkeypatch) -> None:
    job = _lay_out(tmp_path, "withheld_one")
    _kernel_line(job, "node02", _onset("withheld_one"), XID_79)

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("hang triage tried to run a command")

    for name in ("Popen", "run", "call", "check_call", "check_output"):
        monkeypatch.setattr(subprocess, name, forbidden)
    monkeypatch.setattr(os, "system", forbidden)
    monkeypatch.setattr(os, "execvp", forbidden)
    assert _triage(job).isolation_plan is not None


def test_without_a_hardware_record_the_plan_is_withheld_and_says_so(tmp_path) -> None:
    report = _triage(_lay_out(tmp_path, "withheld_one"))
    assert report.isolation_plan is None
    assert "no hardware or host record on node02" in (report.withheld_reason or "")


def test_a_record_on_another_host_does_not_support_and_slightly_lowers(tmp_path) -> None:
    job = _lay_out(tmp_path, "withheld_one")
    baseline = _triage(job).candidates[0].confidence
    _kernel_line(job, "node01", _onset("withheld_one"), XID_79)
    report = _triage(job)
    best = report.candidates[0]
    assert best.ranks == [2] and best.support == []
    assert best.confidence < baseline
    assert report.isolation_plan is None


def test_a_record_a_day_before_the_hang_is_shown_but_not_counted(tmp_path) -> None:
    job = _lay_out(tmp_path, "withheld_one")
    _kernel_line(job, "node02", _onset("withheld_one") - 86_400, XID_79)
    report = _triage(job)
    best = report.candidates[0]
    assert [s.counted for s in best.support] == [False]
    assert "outside the 3600 s window" in best.support[0].reason
    assert report.isolation_plan is None


def test_a_record_without_a_clock_time_is_counted_weakly_and_withholds_the_plan(tmp_path) -> None:
    job = _lay_out(tmp_path, "withheld_one")
    (job / "node02" / "dmesg.log").write_text(f"[ 8123.456789] {XID_79}\n")
    report = _triage(job)
    assert report.candidates[0].support[0].counted
    assert "times are unknown" in (report.withheld_reason or "")


def test_a_missing_dump_withholds_the_plan_even_with_an_oom_kill_on_that_host(tmp_path) -> None:
    job = _lay_out(tmp_path, "stopped")
    _kernel_line(job, "node02", _onset("stopped") + 1, OOM_KILL)
    report = _triage(job)
    best = report.candidates[0]
    assert best.kind.value == "stopped_reporting" and best.ranks == [2]
    assert best.hosts == [], "rank 2 left no dump, so no path states its host"
    assert report.isolation_plan is None
    assert "rank 2: no dump" in (report.withheld_reason or "")


def test_a_mapping_file_places_the_silent_rank_and_its_gpu(tmp_path) -> None:
    job = _lay_out(tmp_path, "stopped")
    _kernel_line(job, "node02", _onset("stopped") + 1, OOM_KILL)
    _kernel_line(job, "node02", _onset("stopped"), XID_79)
    mapping = tmp_path / "ranks.txt"
    mapping.write_text("# rank host gpu\n2 node02 0000:3b:00.0\n3 node02 0000:5e:00.0\n")
    report = _triage(job, rank_hosts_file=mapping)
    best = report.candidates[0]
    assert best.hosts == ["node02"]
    relations = {s.signature_id: s.relation for s in best.support if s.counted}
    assert "the GPU of rank(s) 2" in relations["xid.79"]
    assert "host of rank(s) 2" in relations["kernel.oom_killed_process"]
    assert best.confidence > 0.8
    assert report.isolation_plan is None, "a rank with no dump still withholds the plan"


def test_a_record_on_another_gpu_of_the_same_host_counts_for_less(tmp_path) -> None:
    job = _lay_out(tmp_path, "withheld_one")
    _kernel_line(job, "node02", _onset("withheld_one"), XID_79)
    own_gpu = tmp_path / "own.txt"
    own_gpu.write_text("2 node02 0000:3b:00\n")
    other_gpu = tmp_path / "other.txt"
    other_gpu.write_text("2 node02 0000:86:00\n")
    same = _triage(job, rank_hosts_file=own_gpu).candidates[0]
    other = _triage(job, rank_hosts_file=other_gpu).candidates[0]
    assert same.confidence > other.confidence > 0.85 - 1e-9
    assert "not theirs" in other.support[0].relation


def test_a_mismatch_is_a_program_bug_and_never_drains(tmp_path) -> None:
    job = tmp_path / "job"
    for dump in (case_dir("mismatch_op") / "dumps").iterdir():
        rank = int(dump.name.rsplit("_", 1)[1])
        (job / HOSTS[rank]).mkdir(parents=True, exist_ok=True)
        (job / HOSTS[rank] / dump.name).write_bytes(dump.read_bytes())
    (tmp_path / "capture_times.json").write_text(
        (case_dir("mismatch_op") / "capture_times.json").read_text()
    )
    _kernel_line(job, "node02", _onset("mismatch_op"), XID_79)
    report = _triage(job)
    assert report.candidates[0].kind.value == "mismatched"
    assert "program bug" in (report.withheld_reason or "")


def test_a_dump_taken_before_the_hang_is_stale_and_withholds(tmp_path) -> None:
    job = _lay_out(tmp_path, "withheld_one")
    _kernel_line(job, "node02", _onset("withheld_one"), XID_79)
    times = json.loads((tmp_path / "capture_times.json").read_text())
    times["fr_dump_2"] = _onset("withheld_one") - 600
    (tmp_path / "capture_times.json").write_text(json.dumps(times))
    report = _triage(job)
    assert report.candidates[0].kind.value == "stopped_reporting"
    assert "before the hang began, so stale" in (report.withheld_reason or "")


def test_without_a_scheduler_the_plan_is_withheld_unless_the_inputs_show_one(tmp_path) -> None:
    job = _lay_out(tmp_path, "withheld_one")
    _kernel_line(job, "node02", _onset("withheld_one"), XID_79)
    report = _triage(job, scheduler=None)
    assert "no scheduler named" in (report.withheld_reason or "")
    # A real Slurm line among the inputs names the scheduler.
    (job / "slurm-4242.out").write_text(
        "slurmstepd: error: *** JOB 4242 ON node01 CANCELLED AT 2026-11-30T07:20:00 "
        "DUE TO TIME LIMIT ***\n"
    )
    assert _triage(job, scheduler=None).isolation_plan is not None


@pytest.mark.parametrize("host", ["node02;rm", "$(reboot)", "node 02"])
def test_host_names_unsafe_for_a_shell_never_reach_a_command(tmp_path, host: str) -> None:
    job = _lay_out(tmp_path, "withheld_one")
    _kernel_line(job, "node02", _onset("withheld_one"), XID_79)
    report = _triage(job)
    assert report.isolation_plan is not None
    # The same evidence, had a capture named a host no shell should see.
    best = report.candidates[0]
    tainted = best.model_copy(
        update={
            "hosts": [host],
            "support": [s.model_copy(update={"host": host}) for s in best.support],
        }
    )
    plan, reason = plan_isolation([tainted], scheduler=Scheduler.slurm, silent={}, threshold=0.6)
    assert plan is None and "not safe to put in a command" in (reason or "")


LAUNCHER = REPO / "examples" / "torchrun-bad-sample" / "launcher.log"


def test_a_launcher_summary_naming_rank_and_host_maps_the_rank(tmp_path) -> None:
    # torchrun's real failure summary (from the bundled example run) states
    # `host : localhost` / `rank : 2 (local_rank: 2)` for ranks 0-3.
    report = hang_from_paths(
        HangRequest(paths=[str(case_dir("withheld_one") / "dumps"), str(LAUNCHER)])
    )
    assert report.candidates[0].ranks == [2]
    assert report.candidates[0].hosts == ["localhost"]


def test_the_folders_above_the_given_path_name_no_host(tmp_path) -> None:
    # A checkout at /tmp/fresh2 once made "fresh2" the dumps' host, which then disagreed with
    # the launcher's "localhost": only the part below the path the user gave can name a host.
    kept = tmp_path / "fresh2" / "dumps"
    kept.mkdir(parents=True)
    for dump in (case_dir("withheld_one") / "dumps").iterdir():
        (kept / dump.name).write_bytes(dump.read_bytes())
    report = hang_from_paths(HangRequest(paths=[str(kept), str(LAUNCHER)]))
    assert report.candidates[0].ranks == [2]
    assert report.candidates[0].hosts == ["localhost"]


def test_sources_that_disagree_about_a_host_leave_the_rank_unmapped(tmp_path) -> None:
    job = _lay_out(tmp_path, "withheld_one")
    report = hang_from_paths(HangRequest(paths=[str(job), str(LAUNCHER)]))
    assert report.candidates[0].hosts == []
    assert any("rank 2: the evidence names several hosts" in n for n in report.incomplete)
