"""Tenant-bound request signatures (HMAC-SHA256), checked before any body is diagnosed.

A client signs `v1:{tenant}:{timestamp}:{METHOD}:{path}:{sha256(body) hex}` with its tenant's
secret and sends `X-Denpex-Tenant`, `X-Denpex-Timestamp` (Unix seconds) and
`X-Denpex-Signature: v1=<hex>`. The server refuses unknown tenants, timestamps more than
`max_skew_s` away from its clock, signatures that do not match (compared in constant time) and
a signature it has already accepted within the skew window (replay). Consumes headers, the body
and the tenants' secrets; produces the authenticated tenant or an `AuthError`.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

SCHEME = "v1"


class AuthError(Exception):
    """The request is not signed by a known tenant; the message says why, without secrets."""


def payload(tenant: str, timestamp: str, method: str, path: str, body: bytes) -> bytes:
    digest = hashlib.sha256(body).hexdigest()
    return f"{SCHEME}:{tenant}:{timestamp}:{method.upper()}:{path}:{digest}".encode()


def sign(secret: str, tenant: str, timestamp: str, method: str, path: str, body: bytes) -> str:
    """The `X-Denpex-Signature` header value a client sends."""
    mac = hmac.new(secret.encode(), payload(tenant, timestamp, method, path, body), "sha256")
    return f"{SCHEME}={mac.hexdigest()}"


@dataclass
class ReplayGuard:
    """Signatures accepted within the skew window; a second use of one is a replay."""

    window_s: float
    capacity: int = 100_000

    def __post_init__(self) -> None:
        self._seen: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def first_use(self, signature: str, now: float) -> bool:
        with self._lock:
            while self._seen and (
                next(iter(self._seen.values())) < now - 2 * self.window_s
                or len(self._seen) > self.capacity
            ):
                self._seen.popitem(last=False)
            if signature in self._seen:
                return False
            self._seen[signature] = now
            return True


@dataclass(frozen=True)
class Verifier:
    secrets: dict[str, str]
    max_skew_s: float = 300.0

    def tenant_of(
        self,
        headers: dict[str, str],
        method: str,
        path: str,
        body: bytes,
        replay: ReplayGuard,
        now: float | None = None,
    ) -> str:
        now = time.time() if now is None else now
        tenant = headers.get("x-denpex-tenant", "")
        timestamp = headers.get("x-denpex-timestamp", "")
        signature = headers.get("x-denpex-signature", "")
        secret = self.secrets.get(tenant)
        if not tenant or secret is None:
            raise AuthError("unknown or missing tenant")
        try:
            skew = abs(now - float(timestamp))
        except ValueError:
            raise AuthError("missing or malformed timestamp") from None
        if skew > self.max_skew_s:
            raise AuthError(f"timestamp is {skew:.0f} s away from the server's clock")
        expected = sign(secret, tenant, timestamp, method, path, body)
        if not hmac.compare_digest(expected.encode(), signature.encode()):
            raise AuthError("signature does not match")
        if not replay.first_use(signature, now):
            raise AuthError("this signed request was already used")
        return tenant
