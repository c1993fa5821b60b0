"""denpex's one settings object: every `DENPEX_*` environment variable, with the command line's
options laid over it.

Consumes the environment (through pydantic-settings) and the options a command was given;
produces `Settings`, read by the command line and the service at their edge. Each stage gets
plain values built from it (the hybrid path's `HybridSettings`, the API's `ApiSettings`,
curation's `CurationSettings`, the scan's options); nothing below the edge reads the environment.
Precedence, for every value: an option given on the command line, else its `DENPEX_*`
variable, else the default here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import NonNegativeInt, PositiveFloat, PositiveInt, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

STORE_OFF = frozenset({"off", "none", "no", "false", "0"})
READING_LIMITS = (
    "max_unpacked_bytes",
    "max_members",
    "max_nesting",
    "max_directory_depth",
    "max_dump_bytes",
    "max_dump_containers",
    "max_dump_depth",
)
"""The settings that bound one diagnosis's reading (`denpex.ingest.sources.InputLimits`)."""
DEFAULT_STORE_FILE = "incidents.sqlite"


class Settings(BaseSettings):
    """Every setting a deployment makes; each field is read from `DENPEX_<FIELD>`."""

    model_config = SettingsConfigDict(env_prefix="DENPEX_", extra="ignore")

    rules: Path | None = None
    """A signature library folder used instead of the packaged one (`--rules`)."""
    store: str | None = None
    """The incident store: a SQLite file, a SQLAlchemy URL, or `off` (rules only). Unset: the
    SQLite file in the data folder."""
    index: Path | None = None
    """The retrieval index beside the store (default: derived from the store's URL)."""
    data_dir: Path | None = None
    """The data folder (default `$XDG_DATA_HOME/denpex`, else `~/.local/share/denpex`)."""
    cache_dir: Path | None = None
    """Parsed signatures and compiled databases (default `$XDG_CACHE_HOME/denpex`, else
    `~/.cache/denpex`)."""
    overlay: Path | None = None
    """The deployment's overlay folder of curated signatures (`denpex curate promote` writes
    it; every diagnosis loads it on top of the packaged library)."""
    llm_model: str | None = None
    llm_api_base: str | None = None
    llm_api_key: SecretStr | None = None
    llm_timeout: float = 120.0
    """Seconds one request to the model may take."""
    llm_context_tokens: int | None = None
    llm_max_tokens: int = 1500
    """The answer's token budget."""
    llm_deadline: float = 300.0
    """Seconds the whole LLM step of one diagnosis may take."""
    neighbours: int = 5
    min_similarity: float = 0.4
    broker: str | None = None
    """Celery broker URL for `diagnose --broker` and `denpex jobs`."""
    result_backend: str | None = None
    """Celery result backend when the broker is not Redis."""
    tenant_secret: SecretStr | None = None
    """The API tenant's secret `denpex bundle --send` signs with."""
    slack_signing_secret: SecretStr | None = None
    """Slack's signing secret for `denpex serve --slack-tenant`."""
    job_body_key: SecretStr | None = None
    """The key `denpex serve` seals queued job bodies with (32 random bytes, URL-safe base64;
    the same on every replica of a shared store). Unset with a SQLite store: a key file beside
    the database; a PostgreSQL store needs it."""

    # Bounds on one diagnosis's reading; unset keeps the engine's default (InputLimits).
    max_unpacked_bytes: PositiveInt | None = None
    """Bytes archives and compressed files may unpack to (default 16 GiB; 2 GiB per request
    for `denpex serve`)."""
    max_members: PositiveInt | None = None
    """Members read from one archive (default 100,000)."""
    max_nesting: int | None = None
    """Archives inside archives (default 2; 0 reads no archive inside another)."""
    max_directory_depth: PositiveInt | None = None
    """Folder levels entered below a folder given (default 64)."""
    max_dump_bytes: PositiveInt | None = None
    """One Flight Recorder dump's size (default 512 MiB)."""
    max_dump_containers: PositiveInt | None = None
    """Dicts, lists and tuples one dump could build (default 1,000,000)."""
    max_dump_depth: PositiveInt | None = None
    """How deep one dump nests (default 32)."""
    # Bounds on one request to `denpex serve`.
    max_body_bytes: PositiveInt | None = None
    """A request body's size (default 256 MiB); a larger one is refused with 413 before it is
    read whole."""
    request_time_limit: PositiveFloat | None = None
    """Seconds reading one request's inputs may take (default 120); past it, 503."""
    request_memory_limit: NonNegativeInt | None = None
    """Bytes of address space reading one request's inputs may take (default 4 GiB): each is
    read in a worker process capped at that much past what it holds idle; past it, 413 and the
    worker is replaced. 0: no cap (inputs are read in the server's threads)."""

    @field_validator("max_nesting")
    @classmethod
    def _not_negative(cls, value: int | None) -> int | None:
        if value is not None and value < 0:
            raise ValueError("must be 0 or more")
        return value

    @field_validator(
        "rules", "store", "index", "data_dir", "cache_dir", "overlay", "broker", "result_backend",
        "tenant_secret", "slack_signing_secret", mode="before",
    )  # fmt: skip
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        """`DENPEX_OVERLAY=` names no overlay (not the current folder); so for every path,
        URL and secret."""
        return None if isinstance(value, str) and not value.strip() else value

    def given(self, **options: Any) -> Settings:
        """These settings with the command line's options over them; an option not given
        (None) keeps the environment's value."""
        chosen = {name: value for name, value in options.items() if value is not None}
        unknown = set(chosen) - set(type(self).model_fields)
        if unknown:
            raise TypeError(f"no such setting: {', '.join(sorted(unknown))}")
        return self.model_copy(update=chosen)

    @property
    def reading_limits(self) -> dict[str, int]:
        """The bounds on reading that are set, by `InputLimits` field name."""
        chosen = {name: getattr(self, name) for name in READING_LIMITS}
        return {name: value for name, value in chosen.items() if value is not None}

    @property
    def data_folder(self) -> Path:
        if self.data_dir is not None:
            return self.data_dir
        base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
        return Path(base) / "denpex"

    @property
    def cache_folder(self) -> Path:
        if self.cache_dir is not None:
            return self.cache_dir
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        return Path(base) / "denpex"

    @property
    def default_store(self) -> str:
        """The SQLite file in the data folder, used when no store is named."""
        return str(self.data_folder / DEFAULT_STORE_FILE)

    @property
    def chosen_store(self) -> str | None:
        """The store to use: the one named, else the default store; None when it is `off`."""
        chosen = self.store or self.default_store
        return None if chosen.strip().lower() in STORE_OFF else chosen

    @property
    def named_store(self) -> str | None:
        """The store when one is named (not off); None for the default file in the user's data
        folder, which only this machine can write."""
        if self.store is None or self.store.strip().lower() in STORE_OFF:
            return None
        return self.store

    @property
    def is_default_store(self) -> bool:
        return self.chosen_store == self.default_store


def secret_value(secret: SecretStr | None) -> str | None:
    return secret.get_secret_value() if secret is not None else None
