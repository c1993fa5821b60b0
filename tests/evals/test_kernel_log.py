"""The kernel's OOM report for one cgroup is cut out of a shared kernel log verbatim."""

from __future__ import annotations

from pathlib import Path

from evals.inject.kernel_log import killed_pids, oom_reports

# `dmesg -T` on the generator's machine: two cgroup OOM reports (a probe's and the host-oom-cgroup
# scenario's) with other processes' kernel lines (segfaults, overcommit refusals) between them.
DMESG = (Path(__file__).parent / "data" / "dmesg-two-oom-reports.log").read_text().splitlines()
SCENARIO_CGROUP = "/denpex-inject-host-oom-cgroup-12bc8e81"
PROBE_CGROUP = "/denpex-inject-t1"


def test_the_report_runs_from_the_invocation_to_the_kill() -> None:
    report = oom_reports(DMESG, SCENARIO_CGROUP)
    assert "python invoked oom-killer:" in report[0]
    assert "Memory cgroup out of memory: Killed process 28509 (python)" in report[-1]
    assert all(line in DMESG for line in report)
    assert killed_pids(report) == [28509]


def test_another_cgroup_s_report_and_unrelated_lines_are_left_out() -> None:
    report = oom_reports(DMESG, SCENARIO_CGROUP)
    assert not any(PROBE_CGROUP + "," in line for line in report)
    assert not any("segfault at" in line for line in report)
    assert killed_pids(oom_reports(DMESG, PROBE_CGROUP)) == [18857]


def test_a_cgroup_without_an_oom_event_has_no_report() -> None:
    assert oom_reports(DMESG, "/denpex-inject-never-ran") == []


def test_a_report_cut_before_its_kill_line_is_not_returned() -> None:
    report = oom_reports(DMESG, SCENARIO_CGROUP)
    truncated = DMESG[: DMESG.index(report[-1])]
    assert oom_reports(truncated, SCENARIO_CGROUP) == []
