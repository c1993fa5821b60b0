"""The learning curve: the held-out rounds replayed in order, curated as they arrive.

Consumes the held-out set (its README's case table gives each case's round), the corpus, the
healthy logs and a scratch folder; produces a `LearningCurve`: per round, the blind class
top-1 score of the library without curation and of the library with every earlier round's
misses curated.

The packaged library has seen the held-out set (the fixes each round called for went into
it), so the replay starts from an ablation of it: the library less every signature that is the
top cause of some held-out case and fires on no corpus case (what only the held-out set calls
for). Each round is then scored blind with the library as curated so far; its misses are
curated mechanically, as a curator with the label in hand would: the case is recorded as an
incident, confirmed with its label, a signature is proposed, and it is promoted when the
back-test (on the corpus, the rounds already seen and the healthy logs) is clean. The seed
history is not used to choose distinctive lines, as it holds the rounds not yet reached.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from denpex.curation.compiled import compiled
from denpex.curation.errors import CurationError, PromotionRefused
from denpex.curation.promote import check, current_library, packaged_library, promote
from denpex.curation.propose import propose
from denpex.curation.settings import CurationSettings
from denpex.errors import InputError
from denpex.evaluation.corpus import case_inputs, load_expected
from denpex.evidence import Evidence, EvidenceOptions, assemble
from denpex.hybrid.harvest import abnormal_lines
from denpex.hybrid.path import HybridCase, HybridPath
from denpex.hybrid.settings import HybridSettings
from denpex.match.scan import AbnormalLines, Matcher
from denpex.models import Diagnosis
from denpex.pipeline import DiagnoseOptions, Hybrid, diagnose_evidence
from denpex.retrieval.embedder import SentenceTransformerEmbedder
from denpex.signatures.library import Library
from denpex.store.store import IncidentStore, open_store, store_url

_ROW = re.compile(r"^\| `([^`]+)` \| (\d+)( \(extra\))? \|")
EXTRA = "x"


def rounds_of(heldout: Path) -> dict[str, list[Path]]:
    """The held-out cases per round, in the order they were collected (`5x`: round 5's extra
    cases), from the README's case table."""
    readme = heldout / "README.md"
    try:
        text = readme.read_text(encoding="utf-8")
    except OSError as error:
        raise InputError(f"{readme}: cannot read the rounds ({error})") from None
    rounds: dict[str, list[Path]] = {}
    for line in text.splitlines():
        found = _ROW.match(line)
        if found and (heldout / found.group(1) / "expected.json").is_file():
            key = found.group(2) + (EXTRA if found.group(3) else "")
            rounds.setdefault(key, []).append(heldout / found.group(1))
    if not rounds:
        raise InputError(f"{readme}: no case table with rounds")
    return dict(sorted(rounds.items(), key=lambda item: (int(item[0].rstrip(EXTRA)), item[0])))


@dataclass
class RoundScore:
    round: str
    cases: int
    without: int
    """Cases whose class the uncurated library names right (top-1), blind."""
    curated: int
    """The same with every earlier round curated, blind."""
    misses: int = 0
    promoted: list[str] = field(default_factory=list)
    refused: int = 0
    no_draft: int = 0
    settled_already: int = 0
    """Misses an earlier promotion of the same round already settles."""
    after: int = 0
    """The round's own cases right once its misses are curated (in-sample: the same logs
    arriving again)."""

    def as_dict(self) -> dict[str, object]:
        return {
            "round": self.round,
            "cases": self.cases,
            "without_curation": self.without,
            "with_curation": self.curated,
            "misses_curated": self.misses,
            "promoted": self.promoted,
            "refused": self.refused,
            "no_draft": self.no_draft,
            "settled_already": self.settled_already,
            "same_round_after_curation": self.after,
        }


@dataclass
class LearningCurve:
    left_out: list[str]
    rounds: list[RoundScore] = field(default_factory=list)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, object]:
        return {
            "left_out": self.left_out,
            "rounds": [r.as_dict() for r in self.rounds],
            "seconds": round(self.seconds, 1),
        }

    def text(self) -> str:
        lines = [
            f"library: the packaged one less {len(self.left_out)} signature(s) only the "
            "held-out set calls for",
            "round  cases  without curation  with curation  promoted  refused  no draft"
            "  again after",
        ]
        for r in self.rounds:
            lines.append(
                f"{r.round:<6} {r.cases:>5}  {r.without:>3} ({r.without / r.cases:6.1%})"
                f"     {r.curated:>3} ({r.curated / r.cases:6.1%})  {len(r.promoted):>8}"
                f"  {r.refused:>7}  {r.no_draft:>8}  {r.after:>3} ({r.after / r.cases:6.1%})"
            )
        cases = sum(r.cases for r in self.rounds)
        without = sum(r.without for r in self.rounds)
        curated = sum(r.curated for r in self.rounds)
        lines.append(
            f"all    {cases:>5}  {without:>3} ({without / cases:6.1%})     "
            f"{curated:>3} ({curated / cases:6.1%})"
        )
        return "\n".join(lines) + "\n"


def _diagnose(
    case: Path,
    matcher: Matcher,
    abnormal: AbnormalLines,
    threshold: float,
    hybrid: Hybrid | None = None,
) -> Diagnosis:
    evidence = assemble(case_inputs(case), matcher, EvidenceOptions(abnormal=abnormal))
    options = DiagnoseOptions(confidence_threshold=threshold)
    if hybrid is None:
        return diagnose_evidence(evidence, options, time.perf_counter())
    return diagnose_evidence(evidence, options, time.perf_counter(), hybrid)


def _top(diagnosis: Diagnosis) -> tuple[str | None, str | None]:
    if not diagnosis.root_causes or diagnosis.status.value == "no_failure":
        return None, None
    top = diagnosis.root_causes[0]
    return top.failure_class, top.signature_id


def left_out_signatures(
    packaged: Library, corpus: Path, heldout: list[Path], abnormal: AbnormalLines, backend: str
) -> list[str]:
    """Signatures that are the top cause of some held-out case and fire on no corpus case."""
    matcher = compiled(packaged, backend, None)
    fired: set[str] = set()
    for case in sorted(p.parent for p in corpus.glob("*/expected.json")):
        evidence = assemble(case_inputs(case), matcher, EvidenceOptions(abnormal=abnormal))
        fired.update(m.signature_id for m in evidence.timeline.matches)
    tops = {_top(_diagnose(case, matcher, abnormal, 0.6))[1] for case in heldout}
    return sorted(s for s in tops if s is not None and s not in fired)


class _Capture:
    """Records each diagnosis through the hybrid path and remembers the last incident."""

    def __init__(self, path: HybridPath, abnormal: AbnormalLines) -> None:
        self.path = path
        self.abnormal = abnormal
        self.last: HybridCase | None = None

    def abnormal_lines(self, backend: str, cache_dir: Path | None) -> AbnormalLines:
        return self.abnormal

    def case(self, evidence: Evidence) -> HybridCase:
        self.last = self.path.case(evidence)
        return self.last


def _recorder(store: IncidentStore) -> HybridPath:
    settings = HybridSettings(store_url=store.url)
    return HybridPath(settings, store=store, embedder=SentenceTransformerEmbedder(), answer=False)


def learning_curve(
    heldout: Path,
    corpus: Path,
    healthy: tuple[Path, ...],
    workdir: Path,
    *,
    backend: str = "re",
    cache_dir: Path | None = None,
    threshold: float = 0.6,
    progress: Callable[[str], None] | None = None,
) -> LearningCurve:
    started = time.perf_counter()
    say = progress or (lambda _line: None)
    rounds = rounds_of(heldout)
    abnormal = abnormal_lines(backend, cache_dir)
    packaged = packaged_library(None, cache_dir)
    every = [case for cases in rounds.values() for case in cases]
    left_out = left_out_signatures(packaged, corpus, every, abnormal, backend)
    say(f"left out {len(left_out)} signature(s): {', '.join(left_out)}")
    store = open_store(store_url(str(workdir / "incidents.db")))
    seen = workdir / "seen"
    seen.mkdir(parents=True, exist_ok=True)
    settings = CurationSettings(
        store_url=store.url,
        overlay_dir=workdir / "overlay",
        eval_dirs=(corpus, seen),
        healthy=healthy,
        cache_dir=cache_dir,
        backend=backend,
        threshold=threshold,
        left_out=frozenset(left_out),
        seed=False,
    )
    recorder = _recorder(store)
    curve = LearningCurve(left_out)
    baseline = compiled(packaged.without(left_out), backend, cache_dir)
    for name, cases in rounds.items():
        library = current_library(settings)
        matcher = compiled(library, backend, cache_dir)
        score = RoundScore(name, len(cases), 0, 0)
        misses: list[tuple[Path, str]] = []
        for case in cases:
            expected = load_expected(case).failure_class
            blind, _ = _top(_diagnose(case, baseline, abnormal, threshold))
            curated, _ = _top(_diagnose(case, matcher, abnormal, threshold))
            score.without += blind == expected
            score.curated += curated == expected
            if curated != expected and expected is not None:
                misses.append((case, expected))
        say(f"round {name}: {score.without}/{len(cases)} without, {score.curated} with curation")
        for case in cases:
            (seen / case.name).symlink_to(case.resolve(), target_is_directory=True)
        for case, expected in misses:
            score.misses += 1
            _curate(case, expected, store, recorder, settings, abnormal, score, say)
        again = compiled(current_library(settings), backend, cache_dir)
        for case in cases:
            expected = load_expected(case).failure_class
            score.after += _top(_diagnose(case, again, abnormal, threshold))[0] == expected
        curve.rounds.append(score)
    store.close()
    curve.seconds = time.perf_counter() - started
    return curve


def _curate(
    case: Path,
    expected: str,
    store: IncidentStore,
    recorder: HybridPath,
    settings: CurationSettings,
    abnormal: AbnormalLines,
    score: RoundScore,
    say: Callable[[str], None],
) -> None:
    """One miss, curated as a curator with its label would: record, confirm, propose, and
    promote when the back-test is clean."""
    library = current_library(settings)
    matcher = compiled(library, settings.backend, settings.cache_dir)
    if _top(_diagnose(case, matcher, abnormal, settings.threshold))[0] == expected:
        score.settled_already += 1
        return
    case_recorder = recorder.case
    made: list[str] = []

    class _Capture:
        def abnormal_lines(self, backend: str, cache_dir: Path | None) -> AbnormalLines:
            return abnormal

        def case(self, evidence):  # noqa: ANN001
            hybrid_case = case_recorder(evidence)
            made.append(hybrid_case.incident_id)
            return hybrid_case

    _diagnose(case, matcher, abnormal, settings.threshold, _Capture())
    (incident,) = made
    store.confirm(incident, expected, by="learning curve", note=case.name)
    try:
        draft = propose(incident, store, library, settings, write=False)
        check(draft.signature, library, store, settings)
    except CurationError as problem:
        score.no_draft += 1
        say(f"  {case.name} ({expected}): no draft: {problem}")
        return
    except PromotionRefused as refusal:
        score.refused += 1
        say(f"  {case.name} ({expected}): refused: {'; '.join(refusal.reasons)[:200]}")
        return
    promote(draft.signature, draft.text, store, settings, by="learning curve")
    score.promoted.append(draft.signature.id)
    say(f"  {case.name} ({expected}): promoted {draft.signature.id}")
