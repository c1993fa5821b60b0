"""An isolation plan for the hosts behind a hang, printed for review and never executed.

Consumes the ranked candidates, what evidence is missing or stale, the scheduler (named, or
evident from the inputs' signatures) and a confidence threshold; produces either an
`IsolationPlan` (Slurm `scontrol update ... State=DRAIN`, or Kubernetes `kubectl cordon` and
`kubectl drain --ignore-daemonsets`) or the reasons it is withheld. Taking a node out of service
is an action on shared infrastructure, so every condition must hold: a confident best candidate
that is not a program bug, complete and current dumps, an explicit host for each implicated
rank, a hardware or host record on that host near the hang, a known scheduler, and host names
that are safe to paste into a shell. Nothing here runs a command.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from denpex.events import Match
from denpex.hang.models import Candidate, CulpritKind, IsolationPlan, Scheduler

_SAFE_HOST = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$")
_UNSAFE_REASON = re.compile(r"[^A-Za-z0-9 ._:,()/-]")


def infer_scheduler(records: Sequence[Match]) -> Scheduler | None:
    """The scheduler the inputs show, when they show exactly one."""
    families = {m.signature.family for m in records}
    evident = {
        s
        for s in Scheduler
        if s.value in families or (s is Scheduler.kubernetes and "k8s" in families)
    }
    return evident.pop() if len(evident) == 1 else None


def plan_isolation(
    candidates: Sequence[Candidate],
    *,
    scheduler: Scheduler | None,
    silent: dict[int, str],
    threshold: float,
) -> tuple[IsolationPlan | None, str | None]:
    """The plan, or None and why it is withheld (every reason that applies)."""
    if not candidates:
        return None, "no candidate explanation of a hang: nothing to isolate"
    best = candidates[0]
    reasons: list[str] = []
    if best.confidence < threshold:
        reasons.append(
            f"the best explanation has confidence {best.confidence:.2f}, below the "
            f"{threshold:.2f} needed to act on it"
        )
    if best.kind is CulpritKind.mismatched:
        reasons.append("a mismatched collective is a program bug; isolating hosts would not fix it")
    if silent:
        reasons.append(
            "evidence is incomplete: "
            + "; ".join(f"rank {r}: {why}" for r, why in sorted(silent.items())[:8])
            + ("" if len(silent) <= 8 else f"; and {len(silent) - 8} more")
        )
    if not best.hosts:
        reasons.append(
            f"no evidence states which host rank(s) {', '.join(map(str, best.ranks[:8]))} ran on "
            "(dump paths like node07/fr_dump_3, a --rank-hosts file, or log lines naming both)"
        )
    counted = [s for s in best.support if s.counted and s.host]
    timed = [s for s in counted if s.time is not None]
    if best.hosts and not counted:
        reasons.append(f"no hardware or host record on {', '.join(best.hosts)} near the hang")
    elif counted and not timed:
        reasons.append(
            "the hardware records' times are unknown, so they may predate the hang (stale)"
        )
    if scheduler is None:
        reasons.append("no scheduler named (--scheduler slurm|kubernetes) or evident in the inputs")
    hosts = sorted({s.host for s in timed if s.host})
    unsafe = [h for h in hosts if not _SAFE_HOST.match(h)]
    if unsafe:
        reasons.append(f"host name(s) {unsafe!r} are not safe to put in a command")
    if reasons:
        return None, "; ".join(reasons)
    assert scheduler is not None
    return _plan(best, hosts, timed[0].signature_id, scheduler), None


def _plan(
    best: Candidate, hosts: list[str], signature_id: str, scheduler: Scheduler
) -> IsolationPlan:
    where = f"pg {best.process_group} seq {best.seq}" if best.process_group else "the hang"
    reason = _UNSAFE_REASON.sub(
        "", f"denpex: {signature_id} on the host of a {best.kind} rank, {where}"
    )
    commands: list[str] = []
    for host in hosts:
        if scheduler is Scheduler.slurm:
            commands.append(f'scontrol update NodeName={host} State=DRAIN Reason="{reason}"')
        else:
            commands += [f"kubectl cordon {host}", f"kubectl drain {host} --ignore-daemonsets"]
    return IsolationPlan(
        scheduler=scheduler,
        hosts=hosts,
        commands=commands,
        rationale=(
            f"{best.summary} (confidence {best.confidence:.2f}), supported by {signature_id} on "
            f"{', '.join(hosts)}. Review before running: denpex never runs these commands."
        ),
    )
