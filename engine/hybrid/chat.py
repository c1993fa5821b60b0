"""Sends chat messages to the configured model through litellm and returns its reply.

Consumes LLM settings and chat messages; produces the reply text, or raises `LLMUnavailable`
for anything that kept an answer from arriving (timeout, refused connection, HTTP error,
provider error, empty reply). `ChatModel` is the narrow interface the hybrid path calls;
`LiteLLMChat` is the real client (any provider litellm supports). litellm is imported on the
first call, never by a run the rules settle.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from typing import Any, Protocol
from urllib.parse import urlparse

from denpex.errors import DenpexError
from denpex.hybrid.settings import LLMSettings

FALLBACK_CONTEXT = 8192
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})
LOCAL_KEY = "no-key-needed"
"""What a local OpenAI-protocol server (llama.cpp, vLLM, Ollama) is sent when no key is set:
the OpenAI client refuses to start without one, and such servers ignore it."""


@dataclass(frozen=True)
class Reply:
    text: str
    prompt_tokens: int | None = None
    """The server's own count of the prompt (its `usage`), when it reports one."""


class LLMUnavailable(DenpexError):
    """No usable reply came back from the model."""


class ChatModel(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def deadline_s(self) -> float:
        """Seconds the whole LLM step of one diagnosis may take."""
        ...

    def prompt_budget(self) -> int:
        """Tokens the prompt may use: the context window less room for the answer."""
        ...

    def complete(self, messages: list[dict[str, str]], timeout_s: float | None = None) -> Reply:
        """The reply, waiting at most `timeout_s` (else the configured timeout)."""
        ...


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

    @property
    def deadline_s(self) -> float:
        return self.settings.deadline_s

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

    def _api_key(self) -> str | None:
        if self.settings.api_key is not None or not is_local(self.settings.api_base):
            return self.settings.api_key
        return os.environ.get("OPENAI_API_KEY") or LOCAL_KEY

    def complete(self, messages: list[dict[str, str]], timeout_s: float | None = None) -> Reply:
        litellm = _litellm()
        try:
            response = litellm.completion(
                model=self.settings.model,
                messages=messages,
                api_base=self.settings.api_base,
                api_key=self._api_key(),
                timeout=min(timeout_s or self.settings.timeout_s, self.settings.timeout_s),
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
        usage = getattr(response, "usage", None)
        prompt_tokens = getattr(usage, "prompt_tokens", None)
        return Reply(str(content), prompt_tokens if isinstance(prompt_tokens, int) else None)


def is_local(api_base: str | None) -> bool:
    """Whether the API base URL points at this machine."""
    if not api_base:
        return False
    host = urlparse(api_base if "://" in api_base else f"http://{api_base}").hostname
    return host in LOCAL_HOSTS


def _describe(error: Exception) -> str:
    text = str(error).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(error).__name__}: {first[:300]}" if first else type(error).__name__
