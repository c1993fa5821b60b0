"""The hybrid path's settings as the command line reads them: options over `DENPEX_*` variables.

Consumes command-line values and the environment (through pydantic-settings); produces the
`HybridSettings` the hybrid path is built from, or None when the store is turned off (the run
stays rules-only). Without a store named, the incident store is a SQLite file in the user's data
folder. Only the CLI calls this; nothing deeper reads the environment.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from denpex.errors import InputError
from denpex.hybrid.settings import HybridSettings, LLMSettings, index_path_for


class HybridEnvironment(BaseSettings):
    """`DENPEX_STORE`, `DENPEX_INDEX`, `DENPEX_OVERLAY`, `DENPEX_LLM_MODEL`, `DENPEX_LLM_API_BASE`,
    `DENPEX_LLM_TIMEOUT` (one request, s), `DENPEX_LLM_MAX_TOKENS` (the answer budget),
    `DENPEX_LLM_DEADLINE` (the whole LLM step of a diagnosis, s), ..."""

    model_config = SettingsConfigDict(env_prefix="DENPEX_", extra="ignore")

    store: str | None = None
    index: Path | None = None
    data_dir: Path | None = None
    llm_model: str | None = None
    llm_api_base: str | None = None
    llm_api_key: str | None = None
    llm_timeout: float = 120.0
    llm_context_tokens: int | None = None
    llm_max_tokens: int = 1500
    llm_deadline: float = 300.0
    neighbours: int = 5
    min_similarity: float = 0.4
    overlay: Path | None = None
    """The deployment's overlay folder of curated signatures (`denpex curate promote` writes
    it; every diagnosis loads it on top of the packaged library)."""

    @field_validator("overlay", mode="before")
    @classmethod
    def _empty_is_none(cls, value: object) -> object:
        """`DENPEX_OVERLAY=` names no overlay (not the current folder)."""
        return None if isinstance(value, str) and not value.strip() else value


def _data_dir(environment: HybridEnvironment) -> Path:
    if environment.data_dir is not None:
        return environment.data_dir
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "denpex"


def chosen_overlay(
    overlay: Path | None, environment: HybridEnvironment | None = None
) -> Path | None:
    """The overlay folder: `--overlay`, else `DENPEX_OVERLAY`, else none."""
    if overlay is not None:
        return overlay
    return (environment or HybridEnvironment()).overlay


STORE_OFF = frozenset({"off", "none", "no", "false", "0"})
DEFAULT_STORE_FILE = "incidents.sqlite"


def default_store(environment: HybridEnvironment) -> str:
    """The SQLite file in the data folder, used when no store is named."""
    return str(_data_dir(environment) / DEFAULT_STORE_FILE)


def chosen_store(store: str | None, environment: HybridEnvironment) -> str | None:
    """The store to use: `--store`, else `DENPEX_STORE`, else the default store; None when
    either says `off`."""
    chosen = store or environment.store or default_store(environment)
    return None if chosen.strip().lower() in STORE_OFF else chosen


def named_store(store: str | None) -> str | None:
    """The store's URL when `--store` or `DENPEX_STORE` names one (not off); None for the
    default file in the user's data folder, which only this machine can write."""
    environment = HybridEnvironment()
    chosen = store or environment.store
    if chosen is None or chosen.strip().lower() in STORE_OFF:
        return None
    from denpex.store.store import store_url

    return store_url(chosen)


def hybrid_settings(
    *,
    store: str | None,
    index: Path | None = None,
    llm_model: str | None = None,
    llm_api_base: str | None = None,
    llm_timeout: float | None = None,
) -> HybridSettings | None:
    """The hybrid path's settings, or None when the store is turned off (rules only)."""
    environment = HybridEnvironment()
    chosen = chosen_store(store, environment)
    model = llm_model or environment.llm_model
    if chosen is None:
        if model is not None:
            raise InputError(
                "an LLM answer is queued for curation: it needs the incident store, which is "
                "turned off"
            )
        return None
    from denpex.store.store import store_url

    url = store_url(chosen)
    llm = None
    if model is not None:
        llm = LLMSettings(
            model=model,
            api_base=llm_api_base or environment.llm_api_base,
            api_key=environment.llm_api_key,
            timeout_s=llm_timeout if llm_timeout is not None else environment.llm_timeout,
            context_tokens=environment.llm_context_tokens,
            max_answer_tokens=environment.llm_max_tokens,
            deadline_s=environment.llm_deadline,
        )
    return HybridSettings(
        seed=chosen == default_store(environment),
        store_url=url,
        index_path=index or environment.index or index_path_for(url, _data_dir(environment)),
        llm=llm,
        neighbours=environment.neighbours,
        min_similarity=environment.min_similarity,
    )
