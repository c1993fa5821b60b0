"""Who printed a line: rank, local rank, host and pid from file paths and line prefixes.

Consumes a path (relative to the input given) or one line of text; produces an `Attribution`
and the message with the recognised prefixes removed. Only what the text states is recorded:
torchrun's `[default3]:` names a local rank, PyTorch's excepthook `[rank3]:` a global rank,
`srun --label` a task id (the Slurm global rank), vLLM's `(VllmWorker rank=2 pid=..)` a worker
rank; none is turned into another. What wraps a line without naming anyone (a container
runtime's time and stream, terminal colour codes) is removed so the prefixes behind it are seen.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from denpex.events import Attribution
from denpex.ingest.numbers import identifier

# --- file names -----------------------------------------------------------------------------

_TORCHRUN_LOG = re.compile(r"attempt_\d+/(?P<local>\d+)/(?:stdout|stderr|error)\.(?:log|json)$")
_RANK_IN_NAME = re.compile(r"(?:^|[^a-z])(?:global_?)?rank[_-]?(?P<n>\d+)(?![\d])", re.I)
_LOCAL_RANK_IN_NAME = re.compile(r"(?:^|[^a-z])local_?rank[_-]?(?P<n>\d+)(?![\d])", re.I)
_WORKER_IN_NAME = re.compile(r"(?:^|[^a-z])worker[_-]?(?P<n>\d+)(?![\d])", re.I)
# Node names as clusters spell them: node01, gpu-042, compute-1-2, ip-10-0-0-1, nid001234.
_HOSTLIKE_DIR = re.compile(r"^[a-z]+[-_]?\d+(?:[-.][a-z0-9]+){0,5}$", re.I)
_HEX_RUN = re.compile(r"[0-9a-f]{8,}", re.I)
_NOT_HOST_DIRS = re.compile(
    r"^(?:attempt_\d+|rank[_-]?\d+|worker[_-]?\d+|local_?rank[_-]?\d+|logs?\d*|run\d*|job[_-]?\d*|"
    r"step\d*|v\d+|\d+|slurm-\d+|out\d*|tmp\w*|py\d+|python\d.*)$",
    re.I,
)
_SLURM_OUT = re.compile(r"slurm-(?P<job>\d+)(?:_(?P<task>\d+))?\.(?:out|err)$")


def attribution_from_path(relative_path: str) -> Attribution:
    """Rank, local rank and host that a file's path states.

    `rank3.log`, `worker-3.log`, `node01/rank3.out`, and torchrun's `--log-dir` layout
    `<run>/attempt_0/3/stderr.log` (which names a local rank) are recognised.
    """
    path = PurePosixPath(relative_path)
    posix = path.as_posix()
    name = path.name
    rank = local_rank = None
    if torchrun := _TORCHRUN_LOG.search(posix):
        local_rank = identifier(torchrun["local"])
    elif found := _LOCAL_RANK_IN_NAME.search(name):
        local_rank = identifier(found["n"])
    elif found := _RANK_IN_NAME.search(name) or _WORKER_IN_NAME.search(name):
        rank = identifier(found["n"])
    else:
        for part in reversed(path.parts[:-1]):
            if found := _RANK_IN_NAME.fullmatch(part) or _WORKER_IN_NAME.fullmatch(part):
                rank = identifier(found["n"])
                break
    return Attribution(rank=rank, local_rank=local_rank, host=_host_from_dirs(path))


def _host_from_dirs(path: PurePosixPath) -> str | None:
    for part in reversed(path.parts[:-1]):
        if (
            len(part) <= 40
            and _HOSTLIKE_DIR.match(part)
            and not _NOT_HOST_DIRS.match(part)
            and not _HEX_RUN.search(part)
        ):
            return part
    return None


# --- line prefixes ---------------------------------------------------------------------------

_PREFIXES: tuple[tuple[str, re.Pattern[str]], ...] = (
    # PyTorch's distributed excepthook: global rank.
    ("rank", re.compile(r"\[rank(?P<n>\d+)\]:[ ]?")),
    # torchrun --tee / --redirects: role name plus local rank, e.g. [default3]: or [trainer0]:
    ("local_rank", re.compile(r"\[(?!rank\d)[A-Za-z_][A-Za-z_-]*?(?P<n>\d+)\]:[ ]?")),
    # mpirun --tag-output: [jobid,rank]<stdout>:
    ("rank", re.compile(r"\[\d+,(?P<n>\d+)\]<std(?:out|err)>:[ ]?")),
    # Worker processes: Ray's (RayTrainWorker pid=123, ip=10.0.0.2), or an actor's own repr
    # before the pid, (worker6, rank=6, pid=8930, ip=10.42.3.242); vLLM's
    # (VllmWorker rank=2 pid=2307184) and (Worker_TP1 pid=530), whose TP index is the worker rank.
    (
        "worker",
        re.compile(
            r"\((?:(?:Worker_TP(?P<tp>\d+)|[\w.]+)(?:, rank=(?P<actor_rank>\d+),)? )?"
            r"(?:rank=(?P<n>\d+) )?pid=(?P<pid>\d+)(?:, ip=(?P<ip>[0-9a-fA-F.:]+))?\)[ ]?"
        ),
    ),
    # NCCL's own lines: host:pid:tid [cuda device] (the device index is not a rank).
    ("nccl", re.compile(r"(?P<host>[A-Za-z][\w.-]*):(?P<pid>\d+):\d+ \[\d+\] ")),
    # Terminal colour codes, with or without their ESC (pasted logs often lose it).
    ("colour", re.compile(r"\x1b?\[\d{1,3}(?:;\d{1,3})*m[ ]?")),
)


def _joined(
    prefixes: tuple[tuple[str, re.Pattern[str]], ...],
) -> tuple[re.Pattern[str], dict[str, tuple[str, dict[str, str]]]]:
    """The prefixes as one regex, tried in their order at a position by one `match` (a line
    is split at every scan of it; six calls a prefix, and six more to find none, cost most of
    it); and for each alternative's group, its kind and its own captures' names there."""
    alternatives, groups = [], {}
    for index, (kind, pattern) in enumerate(prefixes):
        names = {name: f"{name}_{index}" for name in pattern.groupindex}
        renamed = re.sub(r"\(\?P<(\w+)>", rf"(?P<\g<1>_{index}>", pattern.pattern)
        alternatives.append(f"(?P<_{index}>{renamed})")
        groups[f"_{index}"] = (kind, names)
    return re.compile("|".join(alternatives)), groups


_ANY_PREFIX, _PREFIX_GROUPS = _joined(_PREFIXES)
_SRUN_LABEL = re.compile(r"[ ]{0,4}(?P<n>\d{1,6}): ")
# Container runtimes store each line as "<RFC 3339 time> <stream> <F|P> <text>" (CRI log files
# under /var/log/pods); `kubectl logs --timestamps` puts "<RFC 3339 time> " in front, and some
# log collectors "<RFC 3339 time>: ".
_CONTAINER_ENVELOPE = re.compile(
    r"(?P<time>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})):?[ ]"
    r"(?P<cri>(?:stdout|stderr) [FP][ ])?"
)


@dataclass(frozen=True, slots=True)
class Prefixed:
    who: Attribution
    message: str
    envelope_time: str | None = None
    """The container runtime's time for the line, when the line came in such an envelope."""


def split_prefixes(line: str, *, srun_labelled: bool = False) -> Prefixed:
    """Strip launcher prefixes from the front of a line and say whom they name.

    Prefixes chain (`[default2]:[rank2]: Traceback ...`); each is consumed in turn. An srun
    task label (`3: `) is only taken when the source is known to be labelled throughout, since
    a bare number and colon can open ordinary text.
    """
    rank = local_rank = pid = None
    host = None
    position = 0
    envelope_time = None
    if envelope := _container_envelope(line):
        envelope_time = envelope["time"]
        position = envelope.end()
    if srun_labelled and (label := _SRUN_LABEL.match(line, position)):
        rank = identifier(label["n"])
        position = label.end()
    while found := _ANY_PREFIX.match(line, position):
        kind, group = _PREFIX_GROUPS[found.lastgroup]  # type: ignore[index]
        if kind == "rank":
            rank = identifier(found[group["n"]])
        elif kind == "local_rank":
            local_rank = identifier(found[group["n"]])
        elif kind == "nccl":
            pid = identifier(found[group["pid"]])
            host = found[group["host"]]
        elif kind == "worker":
            pid = identifier(found[group["pid"]])
            host = found[group["ip"]] or host
            worker_rank = found[group["n"]] or found[group["actor_rank"]] or found[group["tp"]]
            rank = identifier(worker_rank) if worker_rank is not None else rank
        position = found.end()
    return Prefixed(Attribution(rank, local_rank, host, pid), line[position:], envelope_time)


def _container_envelope(line: str) -> re.Match[str] | None:
    """A container runtime's envelope at the front of `line`. Without the CRI stream marker, a
    leading time is only an envelope when a launcher prefix follows it; otherwise it is the
    program's own timestamp and stays in the message."""
    found = _CONTAINER_ENVELOPE.match(line)
    if found is None:
        return None
    if found["cri"] or _ANY_PREFIX.match(line, found.end()):
        return found
    return None


# PyTorch's c10d tags its own messages with the process's rank in the group: `[Rank 1]`, and
# since 2.2 `[PG 0 Rank 1]`, `[PG 0 (default_pg) Rank 1]`, `[PG ID 0 PG GUID 0(default_pg) Rank 1]`.
# They also head the `what():` line of a c10d error that ended the process. Only the default
# group's rank is the global rank; a sub-group's is not.
_C10D_RANK_TAG = re.compile(
    r"(?:^|\.cpp:\d+\] |what\(\):\s+)"
    r"\[(?:PG (?:ID )?0 (?:PG GUID 0(?:\(default_pg\))? )?(?:\(default_pg\) )?)?Rank (?P<n>\d+)\] "
)
_C10D_TAG_REACH = 120


def rank_stated_by_c10d(message: str) -> int | None:
    """The global rank a c10d message names for the process that printed it, if any."""
    found = _C10D_RANK_TAG.search(message, 0, _C10D_TAG_REACH)
    return identifier(found["n"]) if found else None


def looks_srun_labelled(sample_lines: list[str]) -> bool:
    """True when most lines of a sample carry an srun `--label` task prefix."""
    meaningful = [line for line in sample_lines if line.strip()]
    if len(meaningful) < 3:
        return False
    labelled = sum(1 for line in meaningful if _SRUN_LABEL.match(line))
    return labelled >= 0.8 * len(meaningful)


def slurm_job_from_name(name: str) -> str | None:
    found = _SLURM_OUT.search(name)
    return found["job"] if found else None
