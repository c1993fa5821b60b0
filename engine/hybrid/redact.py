"""Replaces secrets, tokens, IP addresses and host names by placeholders, and back.

Consumes text about to leave the process (the LLM prompt) and the host names ingest attributed;
produces the redacted text and a `Redactor` that restores the original values in the answer.
Each distinct value gets one stable placeholder (`<<HOST_1>>`, `<<IP_2>>`, `<<SECRET_1>>`,
`<<EMAIL_1>>`), so the model can still tell hosts apart and refer to them, and its references
are restored. `redact_secrets` is the part the incident store applies before it keeps anything;
`without_secrets_in` applies it to every string of plain JSON data (an incident, a bundle).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from denpex.retrieval.masking import mask

_SECRET_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern)
    for pattern in (
        # URL user information, whatever characters the password holds (up to the last @ of
        # the URL): scheme://user:password@host
        r"[a-zA-Z][\w+.-]*://(?P<v>[^\s/@:]+:[^\s]*)@(?=[^\s@/]+)",
        r"(?P<v>-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----)",
        # Authorization headers: Basic and Bearer credentials
        r"(?i)\b(?:basic|bearer)\s+(?P<v>[A-Za-z0-9._~+/=-]{8,})",
        # --password X, --api-key=X, -p X style flags (the value is the group)
        r"(?i)(?<![\w-])--?[\w-]*(?:passw(?:or)?d|passphrase|secret|token|api[_-]?key|"
        r"access[_-]?key|credentials?)(?:[\w-]*)(?:=|\s+)(?P<v>(?!-)[^\s'\",;]+)",
        # key=value and key: value for names that hold credentials (the value is the group)
        r"(?i)\b(?:[\w-]*(?:api[_-]?key|token|secret|passw(?:or)?d|pwd|credential|auth|"
        r"accountkey|access[_-]?key|sharedaccess(?:key|signature))[\w-]*)"
        r"\s*[=:]\s*['\"]?(?P<v>[^\s'\",;&]{4,})",
        r"\b(?P<v>sk-[A-Za-z0-9_-]{16,})",
        r"\b(?P<v>hf_[A-Za-z0-9]{20,})",
        r"\b(?P<v>gh[pousr]_[A-Za-z0-9]{20,})",
        r"\b(?P<v>github_pat_[A-Za-z0-9_]{20,})",
        r"\b(?P<v>glpat-[A-Za-z0-9_-]{20,})",
        r"\b(?P<v>xox[abprs]-[A-Za-z0-9-]{10,})",
        # cloud keys: AWS access key ids, Google API keys, Azure storage keys, JWTs
        r"\b(?P<v>(?:AKIA|ASIA)[0-9A-Z]{16})\b",
        r"\b(?P<v>AIza[0-9A-Za-z_-]{35})",
        r"(?<![\w+/])(?P<v>[A-Za-z0-9+/]{86}==)",
        r"\b(?P<v>eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})",
    )
)
_EMAIL = re.compile(
    r"(?<![\w.+-])(?P<v>[A-Za-z0-9][\w.+-]*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,})"
    r"(?![\w-])"
)
_IP_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(
        r"(?<![\w.])(?P<v>(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d))(?![\w.])"
    ),
    re.compile(r"(?<![\w:])(?P<v>(?:[0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4})(?![\w:])"),
    re.compile(
        r"(?<![\w:])(?P<v>(?:[0-9a-fA-F]{1,4}:){1,6}:(?:[0-9a-fA-F]{1,4}(?::[0-9a-fA-F]{1,4})*)?"
        r"|::(?:[0-9a-fA-F]{1,4}(?::[0-9a-fA-F]{1,4})*))(?![\w:])"
    ),
)
_TLDS = (
    "com|net|org|io|ai|dev|cloud|local|internal|lan|corp|cluster|edu|gov|svc|info|biz|co|app|"
    "tech|site|us|uk|de|fr|nl|ch|se|eu|cn|jp|kr|tw|sg|in|ca|au|ru|br|es|it|pl|fi|no|hpc|priv|"
    "intra|intranet|home|arpa|localdomain|compute"
)
_HOST_PATTERNS: tuple[re.Pattern[str], ...] = (
    # Fully qualified names under the suffixes clusters and the public DNS use.
    re.compile(
        r"(?i)(?<![\w.-])(?P<v>(?=[a-z0-9-]*[a-z])[a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)*"
        rf"\.(?:{_TLDS}))(?![\w-])"
    ),
    # Cloud instance names that spell their address: ip-10-0-1-75, ip-10-0-1-75.ec2.internal.
    re.compile(r"(?i)(?<![\w-])(?P<v>ip-\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3}(?:\.[a-z0-9-]+)*)"),
    # Values of fields that name a host: "host      : gpu-042", "hostname=node7".
    re.compile(r"(?i)\b(?:host(?:name)?|node(?:name)?)\s*[:=]\s*(?P<v>[A-Za-z0-9][\w.-]*)"),
)
_KEEP = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}
"""Values that identify nothing about the user's infrastructure."""


class Redactor:
    """Remembers every value it replaced so the answer can be restored."""

    def __init__(self, hosts: Iterable[str] = ()) -> None:
        self._hosts = sorted({h for h in hosts if len(h) >= 3 and h not in _KEEP}, key=len)[::-1]
        self._placeholders: dict[tuple[str, str], str] = {}
        self._values: dict[str, str] = {}
        self._counts: dict[str, int] = {}

    def _placeholder(self, kind: str, value: str) -> str:
        key = (kind, value)
        if key not in self._placeholders:
            self._counts[kind] = self._counts.get(kind, 0) + 1
            placeholder = f"<<{kind}_{self._counts[kind]}>>"
            self._placeholders[key] = placeholder
            self._values[placeholder] = value
        return self._placeholders[key]

    def _replace_groups(self, text: str, patterns: Iterable[re.Pattern[str]], kind: str) -> str:
        for pattern in patterns:
            text = pattern.sub(lambda found: self._swap(found, kind), text)
        return text

    def _swap(self, found: re.Match[str], kind: str) -> str:
        value = found.group("v")
        if value in _KEEP or value.startswith("<<"):
            return found.group(0)
        start, end = found.span("v")
        whole_start = found.start()
        return (
            found.group(0)[: start - whole_start]
            + self._placeholder(kind, value)
            + found.group(0)[end - whole_start :]
        )

    def redact(self, text: str) -> str:
        text = self.redact_secrets(text)
        # Whole qualified names before the bare host names they may contain; a known host
        # takes the domain that follows it with it (gpu-042.cluster.example, not <<HOST_1>>...).
        text = self._replace_groups(text, _HOST_PATTERNS, "HOST")
        for host in self._hosts:
            text = re.sub(
                rf"(?<![\w.-]){re.escape(host)}(?:\.[A-Za-z0-9-]+)*(?![\w-])",
                lambda found: self._placeholder("HOST", found.group(0)),
                text,
            )
        return self._replace_groups(text, _IP_PATTERNS, "IP")

    def redact_secrets(self, text: str) -> str:
        """Credentials, tokens, keys and e-mail addresses only (what the incident store must
        never hold; host names and addresses are the operator's own and stay)."""
        text = self._replace_groups(text, _SECRET_PATTERNS, "SECRET")
        return self._replace_groups(text, (_EMAIL,), "EMAIL")

    def restore(self, text: str) -> str:
        if "<<" not in text:
            return text
        return re.sub(r"<<[A-Z]+_\d+>>", lambda m: self._values.get(m.group(0), m.group(0)), text)

    @property
    def replaced(self) -> int:
        return len(self._values)

    @property
    def found(self) -> dict[str, str]:
        """Every value replaced so far, by its placeholder."""
        return dict(self._values)


def without_secrets_in(data: Any) -> Any:
    """`data` (plain JSON data) with every credential, token, key and e-mail address in its
    strings replaced (host names stay: they are where the operator acts); keys are kept.

    A template is its line masked (`xoxb-1234567890-abcdefghijkl` becomes
    `xoxb-<NUM>-abcdefghijkl`), and a masked secret no longer looks like one to the patterns; so
    each secret found in the text is also replaced where it appears masked."""
    redactor = Redactor()
    scrubbed = each_string(data, redactor.redact_secrets)
    masked = {}
    for placeholder, value in redactor.found.items():
        form = mask(value)
        if form != value and len(re.sub(r"<[A-Z]+>|\W", "", form)) >= 4:
            masked[form] = placeholder
    if not masked:
        return scrubbed

    def unmask(text: str) -> str:
        for form, placeholder in masked.items():
            text = text.replace(form, placeholder)
        return text

    return each_string(scrubbed, unmask)


def each_string(value: Any, change: Callable[[str], str]) -> Any:
    """`value` (plain JSON data) with `change` applied to every string in it (not to keys)."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, list | tuple):
        return [each_string(item, change) for item in value]
    if isinstance(value, dict):
        return {key: each_string(item, change) for key, item in value.items()}
    return value
