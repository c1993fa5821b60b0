"""Queued job bodies sealed at rest: raw logs, secrets and all, never lie in the store in clear.

A job's body is the request as it came (before any redaction: redaction needs the diagnosis),
and it waits in the store's jobs table until a replica runs it. Sealing it with AES-256-GCM
under a key that is not in the database keeps a copy of the database (a backup, a file attached
to a bug report, a read replica) from holding anyone's raw logs; the body is deleted when the
job ends (`StoreJobs.finish`).

Consumes the deployment's key (`DENPEX_JOB_BODY_KEY`: 32 random bytes, URL-safe base64) or,
for a SQLite store, which only processes on its own machine share, a key file created beside
the database file, readable by its owner only. A PostgreSQL store is shared by replicas on
other machines, which must hold the same key: without `DENPEX_JOB_BODY_KEY` it is refused.
Produces sealed bytes (`b"dpxseal1" + nonce + ciphertext and tag`) and the body again.
"""

from __future__ import annotations

import base64
import binascii
import os
import secrets
import time
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from denpex.errors import DenpexError
from denpex.store.store import IncidentStore, sqlite_path

MAGIC = b"dpxseal1"
NONCE_BYTES = 12
KEY_BYTES = 32
KEY_FILE_SUFFIX = ".body-key"
"""The key file of a SQLite store: the database file's name with this added."""


class SealError(DenpexError):
    """A key that cannot be used, or a body this key did not seal."""


def new_key() -> str:
    """A fresh key, as `DENPEX_JOB_BODY_KEY` holds it."""
    return base64.urlsafe_b64encode(secrets.token_bytes(KEY_BYTES)).decode()


class BodySeal:
    """Seals and opens job bodies under one key."""

    def __init__(self, key: str) -> None:
        try:
            raw = base64.urlsafe_b64decode(key.strip().encode())
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) != KEY_BYTES:
            raise SealError(
                f"a job body key is {KEY_BYTES} random bytes in URL-safe base64 "
                f"(`python -c 'from denpex.store.sealing import new_key; print(new_key())'`)"
            )
        self._cipher = AESGCM(raw)

    def seal(self, body: bytes, job_id: str) -> bytes:
        """`body` sealed; the job's id is bound in, so a body moved to another job is refused."""
        nonce = os.urandom(NONCE_BYTES)
        return MAGIC + nonce + self._cipher.encrypt(nonce, body, job_id.encode())

    def open(self, sealed: bytes, job_id: str) -> bytes:
        if not sealed.startswith(MAGIC) or len(sealed) < len(MAGIC) + NONCE_BYTES + 16:
            raise SealError(f"job {job_id}: its body is not sealed (written by an older denpex?)")
        nonce = sealed[len(MAGIC) : len(MAGIC) + NONCE_BYTES]
        try:
            return self._cipher.decrypt(nonce, sealed[len(MAGIC) + NONCE_BYTES :], job_id.encode())
        except InvalidTag:
            raise SealError(
                f"job {job_id}: its body was sealed under another key (every replica sharing a "
                "store needs the same DENPEX_JOB_BODY_KEY)"
            ) from None


def seal_for(key: str | None, store: IncidentStore) -> BodySeal:
    """The seal `store`'s jobs use: the key given, else for a SQLite file the key file beside
    it (created on first use), else for an in-memory SQLite store a key of this process's own
    (no other process can see that store)."""
    if key is not None:
        return BodySeal(key)
    if store.engine.dialect.name != "sqlite":
        raise SealError(
            "a store replicas share (PostgreSQL) needs DENPEX_JOB_BODY_KEY, the same on every "
            "replica, to seal the bodies of queued jobs"
        )
    database = sqlite_path(store.url)
    if database is None:
        return BodySeal(new_key())
    return BodySeal(_key_file(Path(f"{database}{KEY_FILE_SUFFIX}")))


def _key_file(path: Path) -> str:
    """The key in `path`, written there first (owner-only, created exclusively: of two
    processes starting at once, one writes it and both read the same key)."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    except OSError as error:
        raise SealError(f"cannot create the job body key {path}: {error.strerror}") from None
    else:
        with os.fdopen(descriptor, "w") as out:
            out.write(new_key() + "\n")
    try:
        for _ in range(50):  # the other process may not have written it yet
            text = path.read_text().strip()
            if text:
                return text
            time.sleep(0.02)
    except OSError as error:
        raise SealError(f"cannot read the job body key {path}: {error.strerror}") from None
    raise SealError(f"the job body key {path} is empty")
