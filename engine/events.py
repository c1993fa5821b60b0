"""Plain data passed between stages: the events ingest builds and the matches on them.

Consumes nothing; produces immutable dataclasses. Rank, local rank, host and pid are separate
identifiers and are never derived from one another here (style principle 9).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from denpex.signatures.signature import Role, Signature


@dataclass(frozen=True, slots=True)
class Attribution:
    """Who printed a line, as far as the file name and the line's prefixes say."""

    rank: int | None = None
    local_rank: int | None = None
    host: str | None = None
    pid: int | None = None

    def merged_over(self, fallback: Attribution) -> Attribution:
        """This attribution, with gaps filled from `fallback` (e.g. the file name's)."""
        return Attribution(
            rank=self.rank if self.rank is not None else fallback.rank,
            local_rank=self.local_rank if self.local_rank is not None else fallback.local_rank,
            host=self.host if self.host is not None else fallback.host,
            pid=self.pid if self.pid is not None else fallback.pid,
        )


@dataclass(frozen=True, slots=True)
class Event:
    """One line (or one multi-line record such as a traceback) of one input."""

    source: str
    line: int
    offset: int
    text: str
    who: Attribution
    time: float | None = None
    time_inferred: bool = False
    boot_seconds: float | None = None
    context: tuple[str, ...] = field(default=())

    @property
    def rank(self) -> int | None:
        return self.who.rank

    @property
    def host(self) -> str | None:
        return self.who.host

    def with_time(self, time: float | None) -> Event:
        return replace(self, time=time)


@dataclass(frozen=True, slots=True)
class Match:
    """A signature that fired on an event, with the named captures of its pattern."""

    signature: Signature
    event: Event
    captures: dict[str, str]

    @property
    def role(self) -> Role:
        return self.signature.role

    @property
    def signature_id(self) -> str:
        return self.signature.id

    def with_event(self, event: Event) -> Match:
        return replace(self, event=event)
