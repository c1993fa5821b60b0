"""What a catalog keeps as context stays quiet under the hand-written signatures.

A reviewed mapping keeps an emitter's informational and recovered-from messages as `context`:
they are what healthy runs print. Each one, rendered with its emitter's own line prefix (the
generator's renderer), must not be read as a failure by a hand-written signature either, or a
healthy run that prints it gets a cause (Composer quoting a cuDNN error it retries around; the
NCCL plugin probe's "cannot open shared object file"; torch_npu's optional-feature warning).
The few kept on purpose are listed with the reason.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from catalogs.core.generate import Entry, classify, merge_releases
from catalogs.core.mapping import Mapping
from catalogs.core.source import emitter_dir, load_source
from catalogs.core.writer import read_lock
from denpex.match.scan import Matcher, without_claimed
from denpex.signatures.library import load_library
from denpex.signatures.signature import Role
from tests.conftest import cache_dir

RULES = Path(__file__).resolve().parents[2] / "rules"

REVIEWED = {
    # The kernel's severity table read as printed lines: mce_panic() prints "[Hardware Error]:
    # Machine check: <severity>" only for a panic, which "Not enabled" never is.
    ("kernel_cat", "hosthw.mce_fatal_panic"),
    # An uncorrected fatal AER report whose agent the kernel could not identify is still a
    # fatal PCIe error on that link.
    ("kernel_cat", "pcie.aer_fatal"),
    # slurmstepd's memory+swap limit notice and srun's step-abort lines are weak symptoms
    # (below the diagnosis threshold): the step did hit its limit, or was aborted.
    ("slurm_cat", "slurm.hit_memory_limit"),
    ("slurm_cat", "slurm.srun_step_aborted"),
    # Xid 154 (GPU recovery action changed) and 156 (resource retirement) ask for a reset or
    # report retired memory: a GPU fault's symptom, whatever the catalog's INFO level says.
    ("xid_cat", "xid.154"),
    ("xid_cat", "xid.156"),
    # The autoscaler logs an infeasible request at WARNING level, and a cluster of fixed size
    # runs the queued tasks later; a request no node type can ever hold is still the weak
    # symptom (below the threshold) of a job that waits on it.
    ("ray_cat", "ray.resources_unschedulable"),
}


@cache
def _hand_written() -> Matcher:
    library = load_library(RULES, include_catalogs=False, cache_dir=cache_dir())
    return Matcher(library, "auto", cache_dir())


def _rendered_context(lock: Path) -> list[Entry]:
    """The family's context messages, each rendered as its emitter prints it."""
    raw = json.loads(lock.read_text(encoding="utf-8"))
    spec = load_source(emitter_dir(raw["emitter"]))
    context = {(m["text"], m["level"]) for m in raw["messages"] if m["disposition"] == "context"}
    found = read_lock(lock, spec.emitter)
    entries = [e for e in merge_releases(found, spec.line_names()) if (e.text, e.level) in context]
    # Every entry mapped alike, so that classify renders each one (context entries are not).
    everything = Mapping.model_validate(
        {
            "emitter": spec.emitter,
            "family": lock.parent.name,
            "owner_default": "platform",
            "references": [spec.repo],
            "rules": [],
            "default": {"class": "unknown", "next_steps": ["-"]},
        }
    )
    classify(entries, spec, everything, check_compiles=False)  # only the renderings are read
    return [e for e in entries if e.rendered]


def test_no_hand_written_cause_or_symptom_fires_on_a_catalogs_context_message() -> None:
    hand = _hand_written()
    fired: set[tuple[str, str, str]] = set()
    rendered = 0
    for lock in sorted(RULES.glob("*_cat/CATALOG.json")):
        lines = [e.rendered + "\n" for e in _rendered_context(lock) if e.rendered]
        rendered += len(lines)
        for line, matches in zip(lines, hand.scan_texts(lines), strict=True):
            fired |= {
                (lock.parent.name, m.signature.id, line.strip()[:160])
                for m in without_claimed(matches)
                if m.role is not Role.context and not m.signature.fallback
            }
    assert rendered > 4000
    assert sorted(f for f in fired if f[:2] not in REVIEWED) == []
