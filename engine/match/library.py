"""Loads the signature library: every `rules/<family>/<name>.yaml` plus `rules/VERSION`.

Consumes a rules directory (the packaged one by default) and, optionally, a deployment's overlay
folder of curated signatures in the same layout (`denpex curate promote` writes it; the packaged
library stays read-only); produces a `Library`: validated signatures, their flattened patterns
in a fixed order, the semantic version and a content digest that together identify the library
in every diagnosis, with the overlay's version beside them when one is loaded.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import yaml
from pydantic import ValidationError

from denpex.errors import RulesError
from denpex.match.backends import PatternSpec
from denpex.match.keywords import required_literals
from denpex.match.signature import Maturity, Pattern, Signature


@dataclass(frozen=True, slots=True)
class PatternRef:
    """Where a flattened pattern came from: its signature and its index in that signature."""

    signature: Signature
    pattern: Pattern
    spec: PatternSpec


@dataclass(frozen=True)
class Library:
    version: str
    digest: str
    signatures: tuple[Signature, ...]
    patterns: tuple[PatternRef, ...] = field(repr=False)
    overlay: str | None = None
    """The overlay's version and digest (`3+0a1b2c3d4e5f`) when an overlay is loaded."""

    @property
    def label(self) -> str:
        """Version and digest (and the overlay's), as recorded in every diagnosis."""
        base = f"{self.version}+{self.digest[:12]}"
        return f"{base} overlay {self.overlay}" if self.overlay else base

    def by_id(self) -> dict[str, Signature]:
        return {s.id: s for s in self.signatures}

    def without_families(self, families: Iterable[str]) -> Library:
        dropped = set(families)
        return _assemble(
            self.version,
            [s for s in self.signatures if s.family not in dropped],
            self.digest,
            self.overlay,
        )

    def without(self, ids: Iterable[str]) -> Library:
        """This library less the signatures with these ids (an ablation); its digest says
        what was left out."""
        dropped = set(ids)
        kept = [s for s in self.signatures if s.id not in dropped]
        hasher = hashlib.sha256(self.digest.encode())
        for signature_id in sorted(dropped):
            hasher.update(f"\0-{signature_id}".encode())
        return Library(
            version=self.version,
            digest=hasher.hexdigest() if dropped else self.digest,
            signatures=tuple(kept),
            patterns=tuple(r for r in self.patterns if r.signature.id not in dropped),
            overlay=self.overlay,
        )

    def with_signatures(self, extra: Iterable[Signature], overlay: str | None = None) -> Library:
        """This library and `extra` (an overlay's or a draft's signatures); an id already in
        the library is refused. The digest stays the packaged library's; `overlay` names what
        was added."""
        added = list(extra)
        known = self.by_id()
        for signature in added:
            if signature.id in known:
                raise RulesError(f"signature {signature.id} is already in the library")
            known[signature.id] = signature
        extra = _assemble(self.version, added, self.digest)
        return Library(
            version=self.version,
            digest=self.digest,
            signatures=(*self.signatures, *added),
            patterns=(*self.patterns, *extra.patterns),
            overlay=overlay or self.overlay,
        )


# The C loader parses a signature file about ten times faster than the pure-Python one.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def default_rules_dir() -> Path:
    return Path(str(resources.files("denpex.rules")))


def _read_version(rules_dir: Path) -> str:
    version_file = rules_dir / "VERSION"
    if not version_file.is_file():
        raise RulesError(f"{rules_dir} has no VERSION file")
    return version_file.read_text(encoding="utf-8").strip()


CATALOG_SUFFIX = "_cat"
"""Families generated from emitters' source (catalogs/) end in this suffix."""


def signature_files(rules_dir: Path, include_catalogs: bool = True) -> list[Path]:
    """Every `<family>/<name>.yaml`; hidden files and folders (an overlay's `.drafts/`) are not
    signatures."""
    return sorted(
        p
        for p in rules_dir.glob("*/*.yaml")
        if not p.name.startswith(".")
        and not p.parent.name.startswith(".")
        and (include_catalogs or not p.parent.name.endswith(CATALOG_SUFFIX))
    )


def load_signature(path: Path, rules_dir: Path) -> Signature:
    """One signature file, validated; its id must equal `<family>.<name>` from its path."""
    relative = path.relative_to(rules_dir)
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=_YAML_LOADER)
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise RulesError(f"{relative}: not valid YAML: {error}") from None
    if not isinstance(raw, dict):
        raise RulesError(f"{relative}: expected a mapping at the top level")
    try:
        signature = Signature.model_validate(raw)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in error.errors()
        )
        raise RulesError(f"{relative}: {problems}") from None
    expected_id = f"{relative.parent.name}.{relative.stem}"
    if signature.id != expected_id:
        raise RulesError(f"{relative}: id {signature.id!r} must equal its path ({expected_id})")
    return signature


def _digest(rules_dir: Path, version: str, files: list[Path]) -> str:
    hasher = hashlib.sha256(version.encode())
    for path in files:
        hasher.update(path.relative_to(rules_dir).as_posix().encode())
        hasher.update(path.read_bytes())
    return hasher.hexdigest()


def _parse_all(rules_dir: Path, files: list[Path]) -> list[Signature]:
    signatures: list[Signature] = []
    seen: dict[str, Path] = {}
    for path in files:
        signature = load_signature(path, rules_dir)
        if signature.id in seen:
            raise RulesError(f"{path}: id {signature.id} already used by {seen[signature.id]}")
        seen[signature.id] = path
        signatures.append(signature)
    return signatures


def _cached(cache_dir: Path | None, digest: str) -> list[Signature] | None:
    if cache_dir is None:
        return None
    try:
        raw = json.loads((cache_dir / f"library-{digest}.json").read_text(encoding="utf-8"))
        return [Signature.model_validate(item) for item in raw]
    except (OSError, ValueError, ValidationError):
        return None  # a missing or damaged cache is rebuilt, never trusted


def _store(cache_dir: Path | None, digest: str, signatures: list[Signature]) -> None:
    if cache_dir is None:
        return
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        target = cache_dir / f"library-{digest}.json"
        temporary = target.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(
            json.dumps([s.model_dump(mode="json", exclude_defaults=True) for s in signatures]),
            encoding="utf-8",
        )
        temporary.replace(target)
    except OSError:
        pass  # caching is an optimisation; a read-only home must not stop a diagnosis


def load_library(
    rules_dir: Path | None = None,
    *,
    include_experimental: bool = False,
    cache_dir: Path | None = None,
    include_catalogs: bool = True,
    overlay_dir: Path | None = None,
) -> Library:
    """The library in `rules_dir` (default: bundled), without deprecated signatures and, unless
    `include_experimental`, without experimental ones (a diagnosis uses them only when asked;
    lint and the example tests check them all). With `cache_dir`, validated signatures are kept
    there under the library's digest, so later loads skip parsing YAML. Without
    `include_catalogs`, only the hand-written families are loaded. With `overlay_dir`, the
    overlay's signatures (`load_overlay`) are added, and its version joins the label."""
    library = _load_one(rules_dir, include_experimental, cache_dir, include_catalogs)
    if overlay_dir is None or not (overlay_dir / "VERSION").is_file():
        return library
    overlay = load_overlay(overlay_dir, include_experimental=include_experimental)
    return library.with_signatures(overlay.signatures, overlay.label)


def load_overlay(overlay_dir: Path, *, include_experimental: bool = False) -> Library:
    """A deployment's overlay folder on its own: `VERSION` (a counter `denpex curate promote`
    raises with each promotion) and `<family>/<name>.yaml` files in the packaged layout."""
    return _load_one(overlay_dir, include_experimental, None, True)


def _load_one(
    rules_dir: Path | None,
    include_experimental: bool,
    cache_dir: Path | None,
    include_catalogs: bool,
) -> Library:
    rules_dir = rules_dir or default_rules_dir()
    if not rules_dir.is_dir():
        raise RulesError(f"rules directory {rules_dir} does not exist")
    version = _read_version(rules_dir)
    files = signature_files(rules_dir, include_catalogs)
    digest = _digest(rules_dir, version, files)
    signatures = _cached(cache_dir, digest)
    if signatures is None:
        signatures = _parse_all(rules_dir, files)
        _store(cache_dir, digest, signatures)
    active = [
        s
        for s in signatures
        if s.status is not Maturity.deprecated
        and (include_experimental or s.status is not Maturity.experimental)
    ]
    return _assemble(version, active, digest)


def library_of(signatures: Iterable[Signature], version: str = "draft") -> Library:
    """A library of just these signatures (a draft's back-test scans with it alone)."""
    listed = list(signatures)
    digest = hashlib.sha256(
        "".join(s.model_dump_json(exclude_defaults=True) for s in listed).encode()
    ).hexdigest()
    return _assemble(version, listed, digest)


def _assemble(
    version: str, signatures: list[Signature], digest: str, overlay: str | None = None
) -> Library:
    refs = tuple(
        PatternRef(
            signature=s,
            pattern=p,
            spec=PatternSpec(
                regex=p.regex,
                caseless=p.caseless,
                keywords=tuple(p.keywords or required_literals(p.regex)),
            ),
        )
        for s in signatures
        for p in s.patterns
    )
    return Library(
        version=version,
        digest=digest,
        signatures=tuple(signatures),
        patterns=refs,
        overlay=overlay,
    )
