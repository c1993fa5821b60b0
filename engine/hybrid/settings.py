"""What the hybrid path is configured with; filled in at the edge (CLI, API), never read here.

Consumes nothing; produces plain frozen dataclasses. Paths derived from the store URL (where the
similarity index lives) are computed by `index_path_for`, given the data directory the edge
chose.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class LLMSettings:
    model: str
    """Any litellm model string, e.g. `openai/gpt-4o-mini` or `ollama/llama3`."""
    api_base: str | None = None
    api_key: str | None = None
    """None lets litellm use the provider's usual environment variable; a server on this
    machine needs none."""
    timeout_s: float = 120.0
    """One request's wait. A small model on a CPU takes minutes; raise it for one."""
    context_tokens: int | None = None
    """The model's context window; None asks litellm's model map, else `FALLBACK_CONTEXT`."""
    max_answer_tokens: int = 1500
    """The answer budget (the request's max_tokens), kept free of the prompt."""
    deadline_s: float = 300.0
    """The whole LLM step of one diagnosis (the request and its repair) ends by then; what is
    left of it bounds each request's timeout."""


@dataclass(frozen=True)
class HybridSettings:
    store_url: str
    index_path: Path | None = None
    """Where the similarity index is persisted; None keeps it in memory for this process."""
    llm: LLMSettings | None = None
    neighbours: int = 5
    min_similarity: float = 0.4
    """Neighbours less similar than this are ignored. On the fixture corpus (tests/hybrid/
    corpus, leave-one-out) 0.4 kept 75% of the cases answered at 76% right, against 64% right
    when every case is answered; re-check with `denpex hybrid eval-retrieval` on a real corpus."""
    model_path: Path | None = None
    """The sentence-transformers model directory; None uses the packaged all-MiniLM-L6-v2."""
    tokenizer_dir: Path | None = None
    """Where tiktoken's encodings are cached; None uses the copy bundled with litellm."""
    seed: bool = False
    """Add denpex's seed history (the labelled eval cases) to the store before retrieval."""


def index_path_for(store_url: str, data_dir: Path) -> Path:
    """Beside a SQLite store file; for a server database, a file in `data_dir` named after it."""
    from sqlalchemy.engine import make_url

    from denpex.store.store import sqlite_path

    database = sqlite_path(store_url)
    if database is not None:
        return database.with_name(database.name + ".faiss")
    shown = make_url(store_url).render_as_string(hide_password=True)
    key = hashlib.sha256(shown.encode()).hexdigest()[:16]
    return data_dir / f"index-{key}.faiss"
