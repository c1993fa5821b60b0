"""The kernel's OOM report for one memory cgroup, cut out of the kernel log.

Consumes kernel log lines (`dmesg -T` output, or plain `dmesg`) and a cgroup name such as
`/denpex-inject-ab12`; produces the lines of every OOM report that concerns that cgroup, from
"... invoked oom-killer" to "Killed process ..." (and the oom_reaper line right after it),
verbatim. Reports about other cgroups on the same machine are left out.
"""

from __future__ import annotations

import re

_INVOKED = re.compile(r"invoked oom-killer:")
_KILLED = re.compile(r"(?:Memory cgroup out of memory|Out of memory): Killed process (\d+)")
_REAPED = re.compile(r"oom_reaper: reaped process (\d+)")
# How far an "oom-kill:" line may sit from its "Killed process" line.
_KILL_WINDOW = 4


def oom_reports(lines: list[str], cgroup: str) -> list[str]:
    selected: list[str] = []
    marker = f"oom_memcg={cgroup},"
    for index, line in enumerate(lines):
        if "oom-kill:" not in line or marker not in line:
            continue
        start = _report_start(lines, index)
        end = _report_end(lines, index)
        if start is None or end is None:
            continue
        selected.extend(lines[start : end + 1])
    return selected


def _report_start(lines: list[str], oom_kill_index: int) -> int | None:
    for index in range(oom_kill_index, -1, -1):
        if _INVOKED.search(lines[index]):
            return index
    return None


def _report_end(lines: list[str], oom_kill_index: int) -> int | None:
    window = range(oom_kill_index, min(len(lines), oom_kill_index + _KILL_WINDOW))
    for index in window:
        if killed := _KILLED.search(lines[index]):
            following = index + 1
            reaped = _REAPED.search(lines[following]) if following < len(lines) else None
            return following if reaped and reaped[1] == killed[1] else index
    return None


def killed_pids(report: list[str]) -> list[int]:
    return [int(found[1]) for line in report if (found := _KILLED.search(line))]
