"""A run that stopped at the start: while its ranks formed the process group, while an extension
was built just in time, or in its first training steps.

Consumes the matched lines whose signature announces a `stage` of a run's start, the scanned
inputs and the world size the evidence states; produces at most one `SilentFinding`. No error
is printed when ranks wait for peers that never arrive or for a first collective that never
completes: the log simply ends after the announcement.

- Ending on "joining" announcements (Lightning's `Initializing distributed: GLOBAL_RANK`, the
  store-based barrier's `Added key`, DeepSpeed's and Megatron's initialisation), with no
  "joined" line: a suspected `launch_config_error`. The ranks that joined wait for peers
  that print nothing, neither joining nor failing to connect: most often processes that were
  never started (a batch script run without srun, one task where the trainer expects one per
  GPU, an interactive allocation). Peers that were started but cannot reach the master print
  their connection errors (the retrying reading below, or a timeout a signature reads).
- Ending on NCCL's report that a communicator was created ("Init COMPLETE", "Launch mode"),
  or on nccl-tests' results header, with nothing at all after: a suspected
  `collective_timeout` in its first collective (peer-to-peer over PCIe that the IOMMU or ACS
  blocks, a peer that never connects). Once the first collective returns the program prints
  its own lines, so no trailing output is allowed.
- Ending after the training loop's start (Megatron's and GPT-NeoX's `training ...`), with no
  step reported: a suspected `collective_timeout` in the first steps (every rank's first
  collectives, and the communicators they create).
- Ending on a process retrying a connection to a peer (NCCL's bootstrap "Call to connect
  returned Connection refused, retrying"), with no success after: a suspected
  `rendezvous_failure`: the peer it dials never listened (not launched, another world size or
  rank numbering, the wrong address or port).
- Ending on an inference engine's start-up (vLLM's and SGLang's weights loaded, KV cache sized,
  workers placed in the world, an offline run's first batch), with no "ready" or request line
  after: a suspected `collective_timeout` in the engine's first collectives (NCCL communicators,
  custom all-reduce, CUDA graph capture across its tensor-parallel workers).
- Ending on a just-in-time extension build or load (torch.utils.cpp_extension's "Loading
  extension module", DeepSpeed's and ColossalAI's op builders), with no "Time to load" after:
  a suspected `dependency_error`, the build directory's lock left by a build that died.

Where the evidence shows the run went on (training progress, or any other matched line after
the announcement, or more than a few lines of output), there is no finding. It is read from
where a log stops, which a pasted excerpt cut at the same place cannot be told apart from, so
it is always a suspicion below the diagnosis threshold.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from denpex.events import Match
from denpex.match.scan import ScannedInput
from denpex.models import SilentFinding
from denpex.reason.root_causes import evidence_of

TRAILING_LINES = 8
"""Lines an input may still hold after its last announcement (a blank line, a library's
start-up notices, a trainer's settings) and still be said to stop there."""
TRAILING_LINES_BY_STAGE = {"connecting": 1}
"""After NCCL's "Init COMPLETE" the program's first collective runs and its own output follows
at once: one line (a blank, a shell prompt) at most."""
CONFIDENCE = 0.35
MAX_EVIDENCE = 8
RANK_CAPTURES = ("claimed_rank", "rank", "pg_rank")


@dataclass(frozen=True)
class _Reading:
    failure_class: str
    title: str
    caveat: str


_JOINING = _Reading(
    "launch_config_error",
    "The log stops while the ranks join the process group ({count}; nothing after)",
    "Read from where the log stops, not from an error: ranks waiting for peers that were never "
    "started print nothing until a timeout, if one is set; peers started with the wrong "
    "address or world size (a rendezvous failure) usually say so. An excerpt cut at this "
    "point looks the same; ranks missing from the announcements may simply be in other logs.",
)
_BUILDING = _Reading(
    "dependency_error",
    "The log stops while an extension is built or loaded just in time ({extension}; nothing after)",
    "Read from where the log stops, not from an error: torch.utils.cpp_extension serialises "
    "builds with a lock file in the build directory, and a build that was killed leaves it, so "
    "every later process waits at 'Loading extension module' for ever. A first build that is "
    "only slow (minutes), or an excerpt cut at this point, looks the same.",
)
_CONNECTING = _Reading(
    "collective_timeout",
    "The log stops once the communicators were created, at the first collective (nothing after)",
    "Read from where the log stops, not from an error: a connection or first collective that "
    "never completes prints nothing until a timeout, if one is set. Peer-to-peer between GPUs "
    "over PCIe that the IOMMU or ACS blocks (consumer and workstation boards, some VMs) hangs "
    "exactly here; so does a peer that never connects. An excerpt cut at this point looks the "
    "same.",
)
_RETRYING = _Reading(
    "rendezvous_failure",
    "The log stops while a process retries connecting to a peer ({count}; nothing after)",
    "Read from where the log stops, not from an error: a peer that refuses the connection is "
    "not listening at the address and port dialled, because it was never launched (a world "
    "size or rank numbering the launch did not give every node), has not started yet, or is "
    "reached at the wrong address. Retries that end in a connection look the same when the "
    "excerpt is cut before they do.",
)
_TRAINING = _Reading(
    "collective_timeout",
    "The log stops in the first training steps (the loop began; no step reported after)",
    "Read from where the log stops, not from an error: a first collective that never "
    "completes (a communicator that cannot connect, a rank that never arrived) prints nothing "
    "until the watchdog's timeout. An excerpt cut at this point, or a first step that is only "
    "slow, looks the same.",
)
_STARTING = _Reading(
    "collective_timeout",
    "The log stops while the inference engine starts (no 'ready' line or request after)",
    "Read from where the log stops, not from an error: the workers' first collectives (NCCL "
    "communicators across GPUs or nodes, custom all-reduce buffers, CUDA graph capture) follow "
    "these lines and print nothing while they wait. Loading a large model that is only slow, or "
    "an excerpt cut at this point, looks the same.",
)
CLOSING_STAGES = ("joined", "built", "serving", "finished")
"""Stages that say a start-up step completed (or the whole loop did): a log ending on one did
not stop in set-up."""


def _rank(match: Match) -> int | None:
    for name in RANK_CAPTURES:
        value = match.captures.get(name)
        if value is not None and value.isdigit() and len(value) <= 9:
            return int(value)
    return match.event.rank


def _count(joining: Sequence[Match], world_size: int | None) -> str:
    announced = sorted({r for r in map(_rank, joining) if r is not None})
    if world_size is not None and announced:
        return f"{len(announced)} of {world_size} ranks announced"
    if announced:
        return f"ranks {', '.join(map(str, announced[:8]))} announced"
    return "the ranks announced"


def stalled_in_setup(
    matches: Sequence[Match], inputs: Sequence[ScannedInput], world_size: int | None
) -> SilentFinding | None:
    staged = [m for m in matches if m.signature.stage is not None]
    if not staged:
        return None
    last = max(staged, key=lambda m: (m.event.time or 0.0, m.event.line))
    if last.signature.stage in CLOSING_STAGES:
        return None
    stage = last.signature.stage
    announcements = [m for m in staged if m.signature.stage == stage]
    last_line: dict[str, int] = {}
    for match in announcements:
        source = match.event.source
        last_line[source] = max(last_line.get(source, 0), match.event.line)
    for scanned in inputs:
        stop = last_line.get(scanned.name)
        if any(stop is None or record.line > stop for record in scanned.progress):
            return None  # training went on, in this input or another one
        if stop is not None and scanned.lines - stop > TRAILING_LINES_BY_STAGE.get(
            stage, TRAILING_LINES
        ):
            return None  # the log goes on after the announcements
    if any(m.event.line > last_line.get(m.event.source, 0) for m in matches):
        return None  # something else was said after them
    if stage == "joining":
        if any(m.signature.stage == "joined" for m in matches):
            return None
        reading = _JOINING
        title = reading.title.format(count=_count(announcements, world_size))
    elif stage == "building":
        reading = _BUILDING
        names = sorted({m.captures.get("extension", "") for m in announcements} - {""})
        title = reading.title.format(extension=", ".join(names[:4]) or "an extension")
    elif stage == "starting":
        reading = _STARTING
        title = reading.title
    elif stage == "connecting":
        reading = _CONNECTING
        title = reading.title
    elif stage == "retrying":
        reading = _RETRYING
        title = reading.title.format(count=f"{len(announcements)} retries")
    else:
        reading = _TRAINING
        title = reading.title
    return SilentFinding(
        failure_class=reading.failure_class,
        title=title,
        detector="setup.stalled",
        ranks=[],
        confidence=CONFIDENCE,
        suspicion=True,
        caveat=reading.caveat,
        evidence=[evidence_of(m) for m in announcements[-MAX_EVIDENCE:]],
    )
