"""Silent findings into the diagnosis: always listed, root causes only where nothing else is.

Consumes the gate's `Diagnosis` and the `SilentFinding`s; produces the diagnosis with the
findings in `silent`. When the rules found no failure in the logs, the findings become its root
causes (best first), each with its evidence, caveat and the owner its class routes to. An
error-based diagnosis is kept, except that a finding comes first where the rules' top cause
names nothing (abnormal lines no signature explains), a finding whose class brings about the
rules' top class (taxonomy `consequences`: a collapsed fp16 loss scale makes the grad norm inf)
is put before it, and a suspicion on the rank where the rules' cause began comes second. A suspicion
(silent data corruption) keeps its capped confidence, so it never reads as confident.
"""

from __future__ import annotations

from denpex.models import Diagnosis, RootCause, SilentFinding, Source, Status
from denpex.taxonomy import can_cause, failure_class

NEXT_STEPS = {
    "straggler": "Compare {where}'s GPU clocks, temperature, PCIe/NVLink width and host load "
    "with its peers (nvidia-smi -q -d CLOCK,PERFORMANCE,TEMPERATURE; top); drain the host if "
    "it stays slow.",
    "nan_or_inf": "Resume from the last checkpoint before step {step} with anomaly detection "
    "(torch.autograd.set_detect_anomaly) and inspect the batch of that step.",
    "loss_divergence": "Resume from a checkpoint before step {step} with a lower learning rate "
    "or tighter gradient clipping; check the data of the steps just before it.",
    "loss_scale_underflow": "Every step overflows in fp16 from step {step}: switch to bf16 or "
    "find the layer whose activations overflow; raise min_loss_scale only to confirm.",
    "rendezvous_failure": "Check that every node started its ranks with the same MASTER_ADDR, "
    "MASTER_PORT and world size and its own node rank, and that each reaches the master's "
    "port (nc -z MASTER_ADDR MASTER_PORT); the ranks that never announced themselves name "
    "the nodes to look at.",
    "launch_config_error": "Check that the launcher started one process per rank the trainer "
    "expects (srun in the batch script, --ntasks-per-node equal to the GPUs per node, devices "
    "and num_nodes as launched); the ranks that never announced themselves were not started.",
    "silent_data_corruption": "Re-run from a checkpoint before step {step} on other GPUs and "
    "compare; run the suspect GPU's diagnostics (dcgmi diag -r 3) before draining {where}.",
}


def _next_steps(finding: SilentFinding) -> list[str]:
    template = NEXT_STEPS.get(finding.failure_class)
    if template is None:
        return []
    where = ", ".join(finding.hosts) or ", ".join(f"rank {r}" for r in finding.ranks) or "it"
    return [template.format(step=finding.step, where=where)]


def to_root_cause(finding: SilentFinding) -> RootCause:
    known = failure_class(finding.failure_class)
    return RootCause(
        failure_class=finding.failure_class,
        category=known.category,
        signature_id=f"silent.{finding.detector.split('+')[0]}",
        confidence=finding.confidence,
        source=Source.rules,
        best_effort=False,
        originating_rank=finding.ranks[0] if len(finding.ranks) == 1 else None,
        originating_host=finding.hosts[0] if len(finding.hosts) == 1 else None,
        first_seen=next((e.time for e in finding.evidence if e.time is not None), None),
        title=finding.title,
        caveat=finding.caveat,
        evidence=finding.evidence,
        next_steps=_next_steps(finding),
        owner=known.owner,
    )


def _names_nothing(cause: RootCause) -> bool:
    """The rules' cause for abnormal lines no signature names (the taxonomy's catch-all
    `unknown`, reason/abnormal.py): it says that something failed, not what."""
    return (
        cause.signature_id is None
        and cause.source is Source.rules
        and (cause.failure_class == "unknown")
    )


def with_silent_findings(
    diagnosis: Diagnosis, findings: list[SilentFinding], threshold: float
) -> Diagnosis:
    if not findings:
        return diagnosis
    update: dict[str, object] = {"silent": findings}
    if diagnosis.status is Status.no_failure and not diagnosis.root_causes:
        causes = [to_root_cause(f) for f in findings]
        confident = causes[0].confidence >= threshold
        update["root_causes"] = causes
        update["status"] = Status.confident if confident else Status.unknown
        update["summary"] = ("Silent failure: " if confident else "Suspected silent failure: ") + (
            findings[0].title
        )
    elif diagnosis.root_causes and _names_nothing(diagnosis.root_causes[0]):
        # Abnormal lines say that something failed; a finding, even a suspicion, says what.
        update["root_causes"] = [to_root_cause(findings[0]), *diagnosis.root_causes]
        update["summary"] = "Suspected silent failure: " + findings[0].title
    elif diagnosis.root_causes:
        top = diagnosis.root_causes[0]
        deeper = [
            f
            for f in findings
            if not f.suspicion
            and f.confidence >= top.confidence * 0.8
            and can_cause(f.failure_class, top.failure_class)
        ]
        # A suspicion on the rank where the rules' cause began is its likeliest alternative.
        alternative = [
            f
            for f in findings
            if f.suspicion
            and top.originating_rank is not None
            and f.ranks == [top.originating_rank]
        ]
        if deeper:
            update["root_causes"] = [to_root_cause(deeper[0]), *diagnosis.root_causes]
            update["summary"] = f"Silent failure: {deeper[0].title}; it explains the " + (
                f"{top.failure_class} the logs show"
            )
        elif alternative:
            update["root_causes"] = [
                top,
                to_root_cause(alternative[0]),
                *diagnosis.root_causes[1:],
            ]
    return diagnosis.model_copy(update=update)
