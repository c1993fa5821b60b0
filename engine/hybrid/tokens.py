"""Counts prompt tokens with tiktoken, from encodings already on disk.

Consumes the directory holding tiktoken's cached encodings (by default the copy bundled inside
litellm) and text; produces token counts. tiktoken downloads a missing encoding, so the file is
checked first and its absence is an error here, never a network call. cl100k_base is used for
every model: for other tokenizers the count is an estimate, which the budget's margin absorbs.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from functools import cache
from pathlib import Path
from typing import Any

from denpex.errors import DenpexError

ENCODING = "cl100k_base"
_ENCODING_URL = f"https://openaipublic.blob.core.windows.net/encodings/{ENCODING}.tiktoken"
_PER_MESSAGE = 4  # role and separators each chat message costs, as OpenAI's cookbook counts


class TokenizerError(DenpexError):
    """No usable tokenizer encoding on disk."""


def bundled_tokenizer_dir() -> Path | None:
    """litellm's bundled tiktoken cache, found without importing litellm."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"


@cache
def _encoding(cache_dir: str) -> Any:
    cached = Path(cache_dir) / hashlib.sha1(_ENCODING_URL.encode()).hexdigest()
    if not cached.is_file():
        raise TokenizerError(f"no {ENCODING} encoding in {cache_dir}; nothing will be downloaded")
    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    # tiktoken only learns where its cache is from this variable; set it for the one load.
    os.environ["TIKTOKEN_CACHE_DIR"] = cache_dir
    try:
        import tiktoken

        return tiktoken.get_encoding(ENCODING)
    finally:
        if previous is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = previous


class TokenCounter:
    def __init__(self, cache_dir: Path | None = None) -> None:
        directory = cache_dir or bundled_tokenizer_dir()
        if directory is None:
            raise TokenizerError("litellm is not installed and no tokenizer directory was given")
        self._encoding = _encoding(str(directory))

    def count(self, text: str) -> int:
        return len(self._encoding.encode(text, disallowed_special=()))

    def count_messages(self, messages: list[dict[str, str]]) -> int:
        return sum(self.count(m["content"]) + _PER_MESSAGE for m in messages) + 2
