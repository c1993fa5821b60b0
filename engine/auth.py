"""Tenant-bound request signatures (HMAC-SHA256), checked before the body is read.

A client signs the canonical request

    v2:{tenant}:{timestamp}:{nonce}:{METHOD}:{path}:{canonical query}:{sha256(body) hex}

with its tenant's secret and sends `X-Denpex-Tenant`, `X-Denpex-Timestamp` (integer Unix
seconds), `X-Denpex-Nonce` (16 to 64 characters of `[A-Za-z0-9_-]`, new for every request),
`X-Denpex-Content-SHA256` (the body's digest) and `X-Denpex-Signature: v2=<hex>`
(`signed_headers` builds them). The canonical query is the query's pairs sorted and
percent-encoded, so `?render=slack` cannot be added or changed in transit.

Because the body's digest travels in a signed header, the server verifies the signature from the
headers alone and reads the body only for a known tenant; it then checks the body against the
signed digest. It refuses timestamps more than `max_skew_s` from its clock (and anything that is
not a plain integer: no `nan`, no `inf`), and a nonce it has already seen from that tenant within
the window (replay). Unknown tenants and wrong signatures get the same answer, so the errors do
not tell which tenants exist. Consumes headers, method, path, query and the tenants; produces
the authenticated `Tenant` or an `AuthError`.

A node's evidence bundle (`denpex bundle`) is signed too, with the same secret, over the tenant
and the bundle's payload (`sign_bundle`): the bundle stays attributable to its tenant, cluster,
job and node wherever it is kept, not only within the request that delivers it.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import parse_qsl, urlencode

from denpex.errors import DenpexError

SCHEME = "v2"
FEATURES = ("diagnose", "hang", "curate")
"""What a tenant's plan may allow; a tenant given as a bare secret has every feature."""

_TIMESTAMP = re.compile(r"\d{1,12}")
_NONCE = re.compile(r"[A-Za-z0-9_-]{16,64}")
_DIGEST = re.compile(r"[0-9a-f]{64}")
_NOT_SIGNED = "the request is not signed by a known tenant"


class AuthError(DenpexError):
    """The request is not authenticated; the message says why, without secrets or tenants."""


class NotAllowed(DenpexError):
    """The tenant is authenticated, but its plan does not include this feature."""


@dataclass(frozen=True)
class Tenant:
    id: str
    secret: str = field(repr=False)
    features: frozenset[str] = frozenset(FEATURES)

    def require(self, feature: str) -> None:
        if feature not in self.features:
            raise NotAllowed(f"the plan of tenant {self.id!r} does not include {feature}")


def tenants_from_config(raw: object) -> dict[str, Tenant]:
    """Tenants from the tenants file: `{"id": "secret"}` or
    `{"id": {"secret": "...", "features": ["diagnose", "hang"]}}`. Raises ValueError."""
    if not isinstance(raw, dict) or not raw:
        raise ValueError('expected {"tenant": "secret of 16+ characters", ...}')
    tenants: dict[str, Tenant] = {}
    for tenant_id, value in raw.items():
        entry = {"secret": value} if isinstance(value, str) else value
        if not isinstance(entry, dict) or not isinstance(entry.get("secret"), str):
            raise ValueError(f"tenant {tenant_id!r}: expected a secret or {{'secret': ...}}")
        if len(entry["secret"]) < 16:
            raise ValueError(f"tenant {tenant_id!r}: the secret needs 16+ characters")
        features = entry.get("features", list(FEATURES))
        if not isinstance(features, list) or not set(features) <= set(FEATURES):
            raise ValueError(f"tenant {tenant_id!r}: features must be a list of {FEATURES}")
        tenants[str(tenant_id)] = Tenant(str(tenant_id), entry["secret"], frozenset(features))
    return tenants


def canonical_query(query: str | Iterable[tuple[str, str]]) -> str:
    pairs = parse_qsl(query, keep_blank_values=True) if isinstance(query, str) else list(query)
    return urlencode(sorted(pairs))


def canonical_request(
    tenant: str,
    timestamp: str,
    nonce: str,
    method: str,
    path: str,
    query: str,
    body_sha256: str,
) -> bytes:
    parts = (SCHEME, tenant, timestamp, nonce, method.upper(), path, canonical_query(query))
    return (":".join(parts) + ":" + body_sha256).encode()


def sign(
    secret: str,
    tenant: str,
    timestamp: str,
    nonce: str,
    method: str,
    path: str,
    query: str,
    body_sha256: str,
) -> str:
    """The `X-Denpex-Signature` header value for a canonical request."""
    message = canonical_request(tenant, timestamp, nonce, method, path, query, body_sha256)
    return f"{SCHEME}={hmac.new(secret.encode(), message, 'sha256').hexdigest()}"


def signed_headers(
    secret: str,
    tenant: str,
    method: str,
    path: str,
    body: bytes = b"",
    query: str = "",
    *,
    now: float | None = None,
    nonce: str | None = None,
) -> dict[str, str]:
    """Every header a client sends with one request (a fresh nonce unless one is given)."""
    timestamp = str(int(time.time() if now is None else now))
    nonce = nonce or secrets.token_urlsafe(18)
    digest = hashlib.sha256(body).hexdigest()
    return {
        "X-Denpex-Tenant": tenant,
        "X-Denpex-Timestamp": timestamp,
        "X-Denpex-Nonce": nonce,
        "X-Denpex-Content-SHA256": digest,
        "X-Denpex-Signature": sign(secret, tenant, timestamp, nonce, method, path, query, digest),
    }


class NonceLedger(Protocol):
    """Nonces seen within the freshness window. Several API replicas share one ledger in the
    incident store; one process alone may use `MemoryNonces`."""

    def first_use(self, tenant: str, nonce: str, now: float, window_s: float) -> bool: ...


class MemoryNonces:
    """The nonces one process has seen, forgotten after twice the window (or past capacity,
    oldest first: a request that old is refused by its timestamp anyway)."""

    def __init__(self, capacity: int = 1_000_000) -> None:
        self._seen: OrderedDict[tuple[str, str], float] = OrderedDict()
        self._capacity = capacity
        self._lock = threading.Lock()

    def first_use(self, tenant: str, nonce: str, now: float, window_s: float) -> bool:
        with self._lock:
            while self._seen and (
                next(iter(self._seen.values())) < now - 2 * window_s
                or len(self._seen) >= self._capacity
            ):
                self._seen.popitem(last=False)
            if (tenant, nonce) in self._seen:
                return False
            self._seen[(tenant, nonce)] = now
            return True


@dataclass(frozen=True)
class Authenticated:
    """A request whose headers are signed by `tenant`; its body must still match `body_sha256`."""

    tenant: Tenant
    body_sha256: str

    def check_body(self, body: bytes) -> None:
        actual = hashlib.sha256(body).hexdigest()
        if not hmac.compare_digest(actual, self.body_sha256):
            raise AuthError("the body does not match its signed digest")


@dataclass(frozen=True)
class Verifier:
    tenants: Mapping[str, Tenant]
    nonces: NonceLedger
    max_skew_s: float = 300.0

    def authenticate(
        self,
        headers: Mapping[str, str],
        method: str,
        path: str,
        query: str,
        now: float | None = None,
    ) -> Authenticated:
        """Checks the signed headers; `headers` keys are lower case."""
        now = time.time() if now is None else now
        timestamp = headers.get("x-denpex-timestamp", "")
        nonce = headers.get("x-denpex-nonce", "")
        digest = headers.get("x-denpex-content-sha256", "").lower()
        if not _TIMESTAMP.fullmatch(timestamp):
            raise AuthError("X-Denpex-Timestamp must be integer Unix seconds")
        skew = abs(now - int(timestamp))
        if skew > self.max_skew_s:
            raise AuthError(f"the timestamp is {skew:.0f} s away from the server's clock")
        if not _NONCE.fullmatch(nonce):
            raise AuthError("X-Denpex-Nonce must be 16 to 64 characters of [A-Za-z0-9_-]")
        if not _DIGEST.fullmatch(digest):
            raise AuthError("X-Denpex-Content-SHA256 must be the body's SHA-256 in hex")
        tenant_id = headers.get("x-denpex-tenant", "")
        tenant = self.tenants.get(tenant_id)
        # An unknown tenant costs the same HMAC as a known one and gets the same answer.
        secret = tenant.secret if tenant is not None else "no tenant has this secret"
        expected = sign(secret, tenant_id, timestamp, nonce, method, path, query, digest)
        given = headers.get("x-denpex-signature", "")
        if not hmac.compare_digest(expected.encode(), given.encode()) or tenant is None:
            raise AuthError(_NOT_SIGNED)
        if not self.nonces.first_use(tenant.id, nonce, now, self.max_skew_s):
            raise AuthError("this nonce was already used: a replayed request")
        return Authenticated(tenant, digest)


BUNDLE_SCHEME = "bundle-v1"


def sign_bundle(secret: str, tenant: str, payload: bytes) -> str:
    """The signature of a node's evidence bundle: the tenant's secret over the tenant and the
    exact payload bytes (which name the cluster, job and node), so a bundle stays attributable
    wherever it travels, not only within the request that delivers it."""
    message = f"{BUNDLE_SCHEME}:{tenant}:".encode() + hashlib.sha256(payload).hexdigest().encode()
    return f"{BUNDLE_SCHEME}={hmac.new(secret.encode(), message, 'sha256').hexdigest()}"


def bundle_signed_by(tenant: Tenant | None, tenant_id: str, payload: bytes, signature: str) -> bool:
    """Whether `signature` is `tenant`'s over `payload` (costs the same for an unknown tenant)."""
    secret = tenant.secret if tenant is not None else "no tenant has this secret"
    expected = sign_bundle(secret, tenant_id, payload)
    return hmac.compare_digest(expected.encode(), signature.encode()) and tenant is not None
