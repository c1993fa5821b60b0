"""A hypothesis: one candidate root cause with the evidence it rests on and what it explains.

Plain data shared by `hypotheses` (which forms and ranks them), `confidence` (which weighs
them) and `root_causes` (which turns them into the contract's entries).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from denpex.events import Attribution, Match
from denpex.hang.models import Candidate
from denpex.reason.culprit import Culprit
from denpex.reason.origin import Finding
from denpex.signatures.signature import Signature
from denpex.taxonomy import Category, Reading, Traits, failure_class, traits

EVIDENCE_LINES = 6


@dataclass
class Hypothesis:
    failure_class: str
    signature: Signature | None
    roots: list[Match]
    prior: float
    originating: Attribution | None
    first_seen: float | None
    confidence: float = 0.0
    explained: list[Match] = field(default_factory=list)
    """Symptoms this hypothesis accounts for."""
    consequences: list[Match] = field(default_factory=list)
    """Root-cause matches of other classes that this failure brings about."""
    culprit: Culprit | None = None
    dump_candidate: Candidate | None = None
    """The Flight Recorder candidate this hypothesis comes from, when it does."""
    corroboration: list[Match] = field(default_factory=list)
    """Log lines that support a hypothesis which has no root-cause line of its own."""
    finding: Finding | None = None
    """How the originating rank was found, or which ranks remain possible (`origin.py`)."""
    reading: Reading | None = None
    """Set when no line states this class: it often lies behind the answer's class `behind`,
    whose own record is missing (`readings.py`)."""
    behind: str | None = None

    @property
    def category(self) -> Category:
        return failure_class(self.failure_class).category

    @property
    def traits(self) -> Traits:
        """The class's traits, as the signature of its first line states them."""
        if self.signature is not None and self.signature.failure_class == self.failure_class:
            return self.signature.traits
        return traits(self.failure_class)

    @property
    def dominant(self) -> bool:
        """A scheduler action on the whole job: it causes what follows it anywhere."""
        return self.traits.acts_on_job


@dataclass(frozen=True)
class JobShape:
    """What the whole input says about the job, for deciding whether two events are related."""

    hosts: frozenset[str]

    @property
    def single_host(self) -> bool:
        return len(self.hosts) <= 1

    @classmethod
    def of(cls, matches: Sequence[Match]) -> JobShape:
        return cls(frozenset(m.event.host for m in matches if m.event.host is not None))
