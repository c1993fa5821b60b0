"""The hybrid path's settings, built from denpex's one settings object (`denpex.settings`).

Consumes `Settings` (the command line's options over the `DENPEX_*` variables); produces the
`HybridSettings` the hybrid path is built from, or None when the store is turned off (the run
stays rules-only). Without a store named, the incident store is a SQLite file in the user's data
folder, seeded with denpex's history.
"""

from __future__ import annotations

from denpex.errors import InputError
from denpex.hybrid.settings import HybridSettings, LLMSettings, index_path_for
from denpex.settings import Settings, secret_value


def hybrid_settings(settings: Settings) -> HybridSettings | None:
    """The hybrid path's settings, or None when the store is turned off (rules only)."""
    chosen = settings.chosen_store
    if chosen is None:
        if settings.llm_model is not None:
            raise InputError(
                "an LLM answer is queued for curation: it needs the incident store, which is "
                "turned off"
            )
        return None
    from denpex.store.store import store_url

    url = store_url(chosen)
    llm = None
    if settings.llm_model is not None:
        llm = LLMSettings(
            model=settings.llm_model,
            api_base=settings.llm_api_base,
            api_key=secret_value(settings.llm_api_key),
            timeout_s=settings.llm_timeout,
            context_tokens=settings.llm_context_tokens,
            max_answer_tokens=settings.llm_max_tokens,
            deadline_s=settings.llm_deadline,
        )
    return HybridSettings(
        seed=settings.is_default_store,
        store_url=url,
        index_path=settings.index or index_path_for(url, settings.data_folder),
        llm=llm,
        neighbours=settings.neighbours,
        min_similarity=settings.min_similarity,
    )
