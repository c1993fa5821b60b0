"""Sends chat messages to the configured model through litellm and returns its reply.

Consumes LLM settings and chat messages; produces the reply text, or raises `LLMUnavailable`
for anything that kept an answer from arriving (timeout, refused connection, HTTP error,
provider error, empty reply). `ChatModel` is the narrow interface the hybrid path calls;
`LiteLLMChat` is the real client (any provider litellm supports). litellm is imported on the
first call, never by a run the rules settle.
"""

from __future__ import annotations

import os
from functools import cache
from typing import Any, Protocol

from denpex.errors import DenpexError
from denpex.hybrid.settings import LLMSettings

FALLBACK_CONTEXT = 8192


class LLMUnavailable(DenpexError):
    """No usable reply came back from the model."""


class ChatModel(Protocol):
    @property
    def name(self) -> str: ...

    def prompt_budget(self) -> int:
        """Tokens the prompt may use: the context window less room for the answer."""
        ...

    def complete(self, messages: list[dict[str, str]]) -> str: ...


@cache
def _litellm() -> Any:
    # litellm fetches a model price map from the internet at import unless told not to.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    return litellm


class LiteLLMChat:
    def __init__(self, settings: LLMSettings) -> None:
        self.settings = settings

    @property
    def name(self) -> str:
        return self.settings.model

    def prompt_budget(self) -> int:
        return self._context_tokens() - self.settings.max_answer_tokens

    def _context_tokens(self) -> int:
        if self.settings.context_tokens is not None:
            return self.settings.context_tokens
        try:
            info = _litellm().get_model_info(self.settings.model)
        except Exception:  # litellm raises its own and plain exceptions for unmapped models
            return FALLBACK_CONTEXT
        return int(info.get("max_input_tokens") or info.get("max_tokens") or FALLBACK_CONTEXT)

    def complete(self, messages: list[dict[str, str]]) -> str:
        litellm = _litellm()
        try:
            response = litellm.completion(
                model=self.settings.model,
                messages=messages,
                api_base=self.settings.api_base,
                api_key=self.settings.api_key,
                timeout=self.settings.timeout_s,
                max_tokens=self.settings.max_answer_tokens,
                temperature=0,
                num_retries=0,
                max_retries=0,
            )
        except Exception as error:  # every provider failure must degrade, never crash
            raise LLMUnavailable(_describe(error)) from None
        try:
            content = response.choices[0].message.content
        except (AttributeError, IndexError, TypeError):
            raise LLMUnavailable("the reply had no message") from None
        if not content or not content.strip():
            raise LLMUnavailable("the reply was empty")
        return str(content)


def _describe(error: Exception) -> str:
    text = str(error).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(error).__name__}: {first[:300]}" if first else type(error).__name__
