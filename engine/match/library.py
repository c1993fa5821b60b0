"""Loads the signature library: every `rules/<family>/<name>.yaml` plus `rules/VERSION`.

Consumes a rules directory (the packaged one by default); produces a `Library`: validated
signatures, their flattened patterns in a fixed order, the semantic version and a content digest
that together identify the library in every diagnosis.
"""

from __future__ import annotations

import hashlib
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

    @property
    def label(self) -> str:
        """Version and digest, as recorded in every diagnosis."""
        return f"{self.version}+{self.digest[:12]}"

    def by_id(self) -> dict[str, Signature]:
        return {s.id: s for s in self.signatures}

    def without_families(self, families: Iterable[str]) -> Library:
        dropped = set(families)
        return _assemble(
            self.version, [s for s in self.signatures if s.family not in dropped], self.digest
        )


def default_rules_dir() -> Path:
    return Path(str(resources.files("denpex.rules")))


def _read_version(rules_dir: Path) -> str:
    version_file = rules_dir / "VERSION"
    if not version_file.is_file():
        raise RulesError(f"{rules_dir} has no VERSION file")
    return version_file.read_text(encoding="utf-8").strip()


def signature_files(rules_dir: Path) -> list[Path]:
    return sorted(p for p in rules_dir.glob("*/*.yaml") if not p.name.startswith("."))


def load_signature(path: Path, rules_dir: Path) -> Signature:
    """One signature file, validated; its id must equal `<family>.<name>` from its path."""
    relative = path.relative_to(rules_dir)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
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


def load_library(rules_dir: Path | None = None, *, include_experimental: bool = True) -> Library:
    rules_dir = rules_dir or default_rules_dir()
    if not rules_dir.is_dir():
        raise RulesError(f"rules directory {rules_dir} does not exist")
    version = _read_version(rules_dir)
    files = signature_files(rules_dir)
    hasher = hashlib.sha256(version.encode())
    signatures: list[Signature] = []
    seen: dict[str, Path] = {}
    for path in files:
        hasher.update(path.relative_to(rules_dir).as_posix().encode())
        hasher.update(path.read_bytes())
        signature = load_signature(path, rules_dir)
        if signature.id in seen:
            raise RulesError(f"{path}: id {signature.id} already used by {seen[signature.id]}")
        seen[signature.id] = path
        if signature.status is Maturity.deprecated:
            continue
        if signature.status is Maturity.experimental and not include_experimental:
            continue
        signatures.append(signature)
    return _assemble(version, signatures, hasher.hexdigest())


def _assemble(version: str, signatures: list[Signature], digest: str) -> Library:
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
    return Library(version=version, digest=digest, signatures=tuple(signatures), patterns=refs)
