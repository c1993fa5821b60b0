"""The hybrid path as the pipeline sees it: a best-effort provider and an incident recorder.

Consumes the settings the edge built (store URL, index path, LLM settings, neighbours), and per
diagnosis the assembled `Evidence` (its abnormal lines and input digests come from the same one
read of the inputs as the rules' matches), the ordered timeline and the gate's result; produces
the best-effort diagnosis (retrieval and, when configured, an LLM draft) and records every
diagnosis in the incident store, queueing those the rules did not settle for a curator.

`HybridPath` holds what lives as long as the process (store, embedder, index, chat model);
`HybridCase` holds what belongs to one diagnosis (its evidence, the incident id). Failures of
the index or the model never fail the diagnosis: the rules' answer stands, with a warning that
says what was unavailable. A diagnosis the store refuses to record raises `NotRecorded`, which
carries the diagnosis: the caller shows it and says it was not recorded (the CLI exits 3).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from denpex.errors import DenpexError
from denpex.events import Match
from denpex.evidence import Evidence
from denpex.hybrid.abnormal import last_resort
from denpex.hybrid.chat import ChatModel, LiteLLMChat, LLMUnavailable
from denpex.hybrid.excerpt import build_excerpt, query_templates
from denpex.hybrid.fuse import Candidate, fuse
from denpex.hybrid.harvest import abnormal_lines
from denpex.hybrid.llm_answer import AnswerError, Checked, check_answer, parse_answer
from denpex.hybrid.prompt import PromptMaterial, PromptTooLarge, build_prompt, render
from denpex.hybrid.redact import Redactor, without_secrets_in
from denpex.hybrid.retrieval_answer import MAX_CAUSES, fused_root_causes
from denpex.hybrid.settings import HybridSettings
from denpex.hybrid.tokens import TokenCounter, TokenizerError
from denpex.match.scan import AbnormalLines
from denpex.models import Diagnosis, RootCause, Source, Status
from denpex.reason.abnormal import origin_of
from denpex.retrieval.embedder import Embedder, SentenceTransformerEmbedder
from denpex.retrieval.index import FaissIndex, VectorIndex
from denpex.retrieval.similar import ClassVote, Neighbour, SimilarIncidents, vote
from denpex.signatures.signature import Role
from denpex.store.errors import NotRecorded
from denpex.store.records import ExcerptLine, IncidentDraft, input_digests
from denpex.store.store import IncidentStore, StoreError, open_store
from denpex.timeline.order import OrderedTimeline

if TYPE_CHECKING:
    import numpy as np

_RETRIEVAL_ERRORS = (DenpexError, OSError, RuntimeError, ImportError, ValueError)


class HybridPath:
    """Process-wide resources of the hybrid path, opened lazily where they are heavy."""

    def __init__(
        self,
        settings: HybridSettings,
        *,
        store: IncidentStore | None = None,
        embedder: Embedder | None = None,
        index: VectorIndex | None = None,
        chat: ChatModel | None = None,
        counter: TokenCounter | None = None,
        answer: bool = True,
        record: bool = True,
        exclude: frozenset[str] = frozenset(),
    ) -> None:
        self.settings = settings
        self.store = store or open_store(settings.store_url)
        self.embedder = embedder or SentenceTransformerEmbedder(settings.model_path)
        self.chat = chat or (LiteLLMChat(settings.llm) if settings.llm else None)
        self.answer = answer
        self.record = record
        self.exclude = exclude
        self._index = index
        self._counter = counter
        self._similar: SimilarIncidents | None = None
        self.token_ratio = 1.0
        """The server's prompt token count over the local estimate, at least 1."""

    @property
    def similar(self) -> SimilarIncidents:
        if self._similar is None:
            if self.settings.seed:
                self._seed()
            if self._index is None:
                self._index = FaissIndex(
                    self.embedder.dim, self.embedder.name, self.settings.index_path
                )
            self._similar = SimilarIncidents(
                self.store, self.embedder, self._index, self._seed_vectors()
            )
        return self._similar

    def _seed(self) -> None:
        """The seed history in the store, once; a store that has it already gains nothing."""
        from denpex import __version__
        from denpex.retrieval.seed import load_seed, seed_store

        seed_store(self.store, load_seed(), denpex_version=__version__, rules_version="seed")

    def _seed_vectors(self) -> dict[str, np.ndarray]:
        """The seed history's shipped vectors, when this embedder made them."""
        digest = getattr(self.embedder, "digest", None)
        if not self.settings.seed or digest is None:
            return {}
        from denpex.retrieval.seed import load_seed_vectors

        return load_seed_vectors(digest)

    @property
    def counter(self) -> TokenCounter:
        if self._counter is None:
            self._counter = TokenCounter(self.settings.tokenizer_dir)
        return self._counter

    def learn_token_ratio(self, estimated: int, reported: int | None) -> None:
        """The server counts the prompt its own way (another tokenizer, a chat template);
        when it says more than the local estimate, later budgets shrink by that ratio."""
        if reported and estimated:
            self.token_ratio = max(self.token_ratio, reported / estimated)

    def excluding(self, incident_ids: Sequence[str]) -> HybridPath:
        """The same path, blind to some incidents (leave-one-out evaluation)."""
        twin = HybridPath(
            self.settings,
            store=self.store,
            embedder=self.embedder,
            chat=self.chat,
            counter=self._counter,
            answer=self.answer,
            record=self.record,
            exclude=self.exclude | frozenset(incident_ids),
        )
        twin._index, twin._similar = self._index, self._similar
        return twin

    def abnormal_lines(self, backend: str = "auto", cache_dir: Path | None = None) -> AbnormalLines:
        """What the one scan of the inputs looks for on the best effort's behalf."""
        return abnormal_lines(backend, cache_dir)

    def case(self, evidence: Evidence) -> HybridCase:
        return HybridCase(self, evidence)


@dataclass
class Observation:
    harvested: list[Match]
    """The abnormal lines no signature matched, in input order."""
    excerpt: list[ExcerptLine]
    templates: list[str]
    digests: dict[str, str]
    warnings: list[str] = field(default_factory=list)


@dataclass
class _Retrieved:
    neighbours: list[Neighbour] = field(default_factory=list)
    votes: list[ClassVote] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


class HybridCase:
    """The hybrid path for one diagnosis."""

    def __init__(self, path: HybridPath, evidence: Evidence) -> None:
        self.path = path
        self.evidence = evidence
        self.incident_id = uuid.uuid4().hex
        self.tenant: str | None = None
        """The API tenant the diagnosis is recorded for (the API sets it and the id)."""
        self._observation: Observation | None = None

    # what the failure looks like ------------------------------------------------------------

    def observe(self, timeline: OrderedTimeline) -> Observation:
        if self._observation is None:
            self._observation = self._observe(timeline)
        return self._observation

    def _observe(self, timeline: OrderedTimeline) -> Observation:
        harvested = list(self.evidence.abnormal)
        excerpt = build_excerpt(timeline, harvested)
        return Observation(
            harvested, excerpt, query_templates(excerpt), dict(self.evidence.digests), []
        )

    def abnormal(self, timeline: OrderedTimeline) -> list[Match]:
        """The abnormal lines no signature matched (the gate's test of a healthy run)."""
        return list(self.evidence.abnormal)

    # the best-effort answer -----------------------------------------------------------------

    def best_effort(self, uncertain: Diagnosis, timeline: OrderedTimeline) -> Diagnosis:
        """The gate's unconfident result, fused with retrieval, lexical cues and the LLM."""
        if not self.path.answer:
            return uncertain
        seen = self.observe(timeline)
        if not seen.excerpt:
            return uncertain
        rules_causes = list(uncertain.root_causes)
        retrieved = self._retrieve(seen)
        warnings = [*uncertain.warnings, *seen.warnings, *retrieved.warnings]
        drafted_causes: list[RootCause] = []
        drafted_summary = ""
        model = None
        if self.path.chat is not None:
            drafted, problem = self._ask(seen, rules_causes, retrieved.neighbours)
            if problem:
                warnings.append(f"LLM step skipped, answer from retrieval only: {problem}")
            if drafted is not None:
                warnings += [f"LLM answer: {note}" for note in drafted.notes]
                if drafted.causes:
                    drafted_causes, drafted_summary = drafted.causes, drafted.summary
                    model = self.path.chat.name
        read = _read_by_hand(timeline)
        ranked = fuse(
            rules_causes,
            retrieved.votes,
            [line.text for line in seen.excerpt if (line.source, line.line) not in read],
            drafted_causes,
            frames_only=bool(seen.harvested)
            and all(last_resort(m.signature) for m in seen.harvested),
        )
        if not any(source != "rules" for c in ranked for source in c.support):
            # Nothing beyond the rules' own candidates: no best effort to add.
            return uncertain.model_copy(
                update={
                    "status": Status.unknown,
                    "summary": _unknown_summary(uncertain, seen.excerpt),
                    "warnings": warnings,
                }
            )
        answer = fused_root_causes(
            ranked[:MAX_CAUSES],
            rules_causes=rules_causes,
            drafted=drafted_causes,
            votes=retrieved.votes,
            neighbours=retrieved.neighbours,
            excerpt=seen.excerpt,
            origin=origin_of(seen.harvested) if seen.harvested else None,
        )
        summary = _fused_summary(ranked[0], answer[0], retrieved, seen.excerpt, drafted_summary)
        return uncertain.model_copy(
            update={
                "status": Status.best_effort,
                "summary": summary,
                "root_causes": _distinct_classes(
                    [*answer, *(c for c in rules_causes if c.failure_class == "unknown")]
                ),
                "warnings": warnings,
                "provenance": uncertain.provenance.model_copy(
                    update={"model": model if answer[0].source is Source.llm else None}
                ),
            }
        )

    def _retrieve(self, seen: Observation) -> _Retrieved:
        settings = self.path.settings
        try:
            found = self.path.similar.search(
                seen.templates, settings.neighbours, exclude=self.path.exclude
            )
        except _RETRIEVAL_ERRORS as error:
            return _Retrieved(warnings=[f"similar incidents unavailable: {_one_line(error)}"])
        close = [n for n in found if n.similarity >= settings.min_similarity]
        warnings = []
        if found and not close:
            warnings.append(
                f"no past incident is similar enough (best {found[0].similarity:.2f}, "
                f"needed {settings.min_similarity:.2f})"
            )
        return _Retrieved(neighbours=close, votes=vote(close), warnings=warnings)

    def _ask(
        self, seen: Observation, rules_causes: list[RootCause], neighbours: list[Neighbour]
    ) -> tuple[Checked | None, str | None]:
        """The LLM's checked draft, within the step's deadline. The server's own token count
        (its `usage`) corrects the local estimate; the repair request is budgeted with it, and
        re-rendered smaller when the first prompt, the reply and the repair do not all fit."""
        chat = self.path.chat
        assert chat is not None
        deadline = time.monotonic() + chat.deadline_s
        hosts = {line.host for line in seen.excerpt if line.host}
        redactor = Redactor(hosts)
        counter = self.path.counter
        try:
            incidents = {
                i.id: i for i in self.path.store.incidents(n.incident_id for n in neighbours)
            }
            material = PromptMaterial(seen.excerpt, rules_causes, neighbours, incidents)
            budget = int(chat.prompt_budget() / self.path.token_ratio)
            prompt = build_prompt(material, counter, budget, redactor)
            reply = chat.complete(prompt.messages, _left(deadline))
            self.path.learn_token_ratio(prompt.tokens, reply.prompt_tokens)
            try:
                answer = parse_answer(reply.text)
            except AnswerError as problem:
                repair = render("repair.j2", problem=str(problem))
                tail = [
                    {"role": "assistant", "content": reply.text},
                    {"role": "user", "content": repair},
                ]
                extra = counter.count_messages(tail)
                budget = int(chat.prompt_budget() / self.path.token_ratio) - extra
                if prompt.tokens > budget:
                    prompt = build_prompt(material, counter, budget, redactor)
                second = chat.complete([*prompt.messages, *tail], _left(deadline))
                self.path.learn_token_ratio(prompt.tokens + extra, second.prompt_tokens)
                answer = parse_answer(second.text)
        except AnswerError as problem:
            return None, f"the reply was invalid twice ({problem})"
        except (LLMUnavailable, PromptTooLarge, TokenizerError, StoreError) as problem:
            return None, str(problem)
        return check_answer(answer, prompt.line_ids, redactor), None

    # recording ------------------------------------------------------------------------------

    def record(self, diagnosis: Diagnosis, timeline: OrderedTimeline) -> Diagnosis:
        """Stores the diagnosis as an incident; one the rules did not settle is queued."""
        return self._record(diagnosis, timeline) if self.path.record else diagnosis

    def _record(self, diagnosis: Diagnosis, timeline: OrderedTimeline) -> Diagnosis:
        seen = self.observe(timeline)
        queue = diagnosis.status in (Status.best_effort, Status.unknown)
        if queue:
            diagnosis = diagnosis.model_copy(update={"curation_id": self.incident_id})
        draft = IncidentDraft(
            diagnosis=diagnosis,
            inputs=input_digests(diagnosis.inputs, seen.digests),
            excerpt=seen.excerpt,
            templates=seen.templates,
            embedder=self.path.embedder.name,
            queue=queue,
            tenant=self.tenant,
        )
        try:
            self.path.store.add(without_secrets(draft), incident_id=self.incident_id)
        except StoreError as error:
            warning = f"the diagnosis was not recorded: {error}"
            unrecorded = diagnosis.model_copy(
                update={"curation_id": None, "warnings": [*diagnosis.warnings, warning]}
            )
            raise NotRecorded(warning, unrecorded) from None
        return diagnosis


def without_secrets(draft: IncidentDraft) -> IncidentDraft:
    """The draft with every credential, token, key and e-mail address in its text replaced,
    masked forms in templates included (`without_secrets_in`): the store never holds them."""
    return IncidentDraft.model_validate(without_secrets_in(draft.model_dump(mode="json")))


def _read_by_hand(timeline: OrderedTimeline) -> set[tuple[str, int]]:
    """The lines a hand-written signature read as a failure of a stated class. Its reading (the
    mechanism behind "failed to send a keep-alive heartbeat to the rendezvous") is the line's
    meaning; the lexical cues are for the lines no signature understood, and words on an
    understood line ("rendezvous") would vote a second time, with less understanding, against
    the reading the rules already weighed."""
    return {
        (m.event.source, m.event.line)
        for m in timeline.matches
        if m.signature.failure_class
        and m.role is not Role.context
        and not m.signature.generated
        and not m.signature.fallback
    }


def _left(deadline: float) -> float:
    """Seconds left before the LLM step's deadline; none left is the model being unavailable."""
    left = deadline - time.monotonic()
    if left < 1.0:
        raise LLMUnavailable("no time left within the LLM step's deadline")
    return left


def _distinct_classes(causes: list[RootCause]) -> list[RootCause]:
    """The first cause of each class, in order: a class is never listed twice."""
    seen: set[str] = set()
    kept = []
    for cause in causes:
        if cause.failure_class not in seen:
            seen.add(cause.failure_class)
            kept.append(cause)
    return kept


def _quote(text: str, limit: int = 160) -> str:
    text = text.strip()
    return f'"{text[: limit - 3]}..."' if len(text) > limit else f'"{text}"'


def _fused_summary(
    top: Candidate,
    cause: RootCause,
    retrieved: _Retrieved,
    excerpt: list[ExcerptLine],
    drafted_summary: str,
) -> str:
    ordered = sorted(top.support.items(), key=lambda item: -item[1])
    sources = ", ".join(f"{name} {support:.2f}" for name, support in ordered)
    where = f" on rank {cause.originating_rank}" if cause.originating_rank is not None else ""
    evidence = cause.evidence[0] if cause.evidence else excerpt[0]
    text = (
        f"Best effort, not settled by a signature: likely {top.failure_class}{where} "
        f"(confidence {cause.confidence:.2f}; support: {sources}"
    )
    if retrieved.votes and top.support.get("retrieval"):
        nearest = retrieved.votes[0].neighbours[0]
        text += f"; nearest past incident {nearest.incident_id[:12]} at {nearest.similarity:.2f}"
    text += f"). Evidence: {_quote(evidence.text)}."
    if drafted_summary and cause.source is Source.llm:
        text += f" Drafted by an LLM: {drafted_summary}"
    return text


def _unknown_summary(uncertain: Diagnosis, excerpt: list[ExcerptLine]) -> str:
    if uncertain.status is Status.unknown:
        return uncertain.summary + " No similar past incident with a known cause was found."
    return (
        f"No failure signature matched, but {len(excerpt)} abnormal line(s) were found; the "
        f"first: {_quote(excerpt[0].text)}. No similar past incident with a known cause was "
        "found."
    )


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__
