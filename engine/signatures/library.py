"""Loads the signature library: every `rules/<family>/<name>.yaml` plus `rules/VERSION`.

Consumes a rules directory (the packaged one by default) and, optionally, a deployment's overlay
folder of curated signatures in the same layout (`denpex curate promote` writes it; the packaged
library stays read-only); produces a `Library`: validated signatures, their flattened patterns
in a fixed order, the semantic version and a content digest that together identify the library
in every diagnosis, with the overlay's version beside them when one is loaded.
"""

from __future__ import annotations

import functools
import gc
import hashlib
import io
import os
import pickle
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from importlib import resources
from pathlib import Path

import yaml
from pydantic import BaseModel, ValidationError

from denpex.bulk import paused_gc
from denpex.errors import RulesError
from denpex.signatures.backends import PatternSpec
from denpex.signatures.keywords import required_literals
from denpex.signatures.signature import Maturity, Pattern, Signature


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
    """Every `<family>/<name>.yaml`, in (family, name) order; hidden files and folders (an
    overlay's `.drafts/`) are not signatures."""
    return [rules_dir / family / name for family, name in _listing(rules_dir, include_catalogs)]


def _listing(rules_dir: Path, include_catalogs: bool) -> list[tuple[str, str]]:
    """(family, file name) of every signature file, sorted. With `os.scandir` and no `Path`
    per file: globbing and sorting ten thousand paths cost a tenth of a second at every start."""
    found: list[tuple[str, str]] = []
    with os.scandir(rules_dir) as families:
        for family in families:
            if family.name.startswith(".") or not family.is_dir():
                continue
            if not include_catalogs and family.name.endswith(CATALOG_SUFFIX):
                continue
            with os.scandir(family.path) as names:
                found.extend(
                    (family.name, entry.name)
                    for entry in names
                    if entry.name.endswith(".yaml") and not entry.name.startswith(".")
                )
    return sorted(found)


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


def _stat_key(rules_dir: Path, version: str, listing: list[tuple[str, str]]) -> str:
    """What the files' names, sizes and modification times say about the library, without
    reading them (Python trusts its `.pyc` files on the same evidence): the cache index maps
    it to the content digest, which reading 10,000 files to hash them would cost a start-up."""
    hasher = hashlib.sha256(f"{rules_dir}\0{version}".encode())
    root = os.fspath(rules_dir)
    for family, name in listing:  # a string per file, not a Path: see _listing
        status = os.stat(f"{root}/{family}/{name}")  # noqa: PTH116
        hasher.update(f"\0{family}/{name}\0{status.st_size}\0{status.st_mtime_ns}".encode())
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


_CACHE_FORMAT = 3
"""Raised when what the cache holds changes shape; an older cache file is then not read."""


def _cache_file(cache_dir: Path, digest: str) -> Path:
    """Where the parsed library of `digest` is kept. The name also holds the schema the
    signatures were validated against (this package's signature models and taxonomy): loading
    from the cache does not validate again, so a changed schema must not find an old file."""
    return cache_dir / f"library-{digest}-{_schema_key()}.pickle"


@functools.cache
def _schema_key() -> str:
    from denpex.signatures import signature

    hasher = hashlib.sha256(str(_CACHE_FORMAT).encode())
    hasher.update(Path(signature.__file__).read_bytes())
    hasher.update(resources.files("denpex").joinpath("taxonomy.yaml").read_bytes())
    return hasher.hexdigest()[:16]


def _cached(cache_dir: Path | None, digest: str) -> _Parsed | None:
    if cache_dir is None:
        return None
    try:
        data = _cache_file(cache_dir, digest).read_bytes()
        parsed = _SignatureUnpickler(io.BufferedReader(io.BytesIO(data))).load()
    except (OSError, *_DAMAGED):
        return None  # a missing or damaged cache is rebuilt, never trusted
    if not (isinstance(parsed, _Parsed) and parsed.format == _CACHE_FORMAT):
        return None
    return parsed


def _store(cache_dir: Path | None, digest: str, parsed: _Parsed) -> None:
    if cache_dir is None:
        return
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        target = _cache_file(cache_dir, digest)
        temporary = target.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_bytes(pickle.dumps(parsed, protocol=5))
        temporary.replace(target)
    except OSError:
        pass  # caching is an optimisation; a read-only home must not stop a diagnosis


def _indexed_digest(cache_dir: Path | None, key: str) -> str | None:
    if cache_dir is None:
        return None
    try:
        digest = (cache_dir / f"library-index-{key}").read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return digest if len(digest) == 64 and all(c in "0123456789abcdef" for c in digest) else None


def _index(cache_dir: Path | None, key: str, digest: str) -> None:
    if cache_dir is None:
        return
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        target = cache_dir / f"library-index-{key}"
        temporary = target.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(digest, encoding="ascii")
        temporary.replace(target)
    except OSError:
        pass


@dataclass(frozen=True)
class _Parsed:
    """What the cache keeps of a parsed library: validated signatures and each pattern's derived
    keywords (deriving them parses every regex again: a second per 10,000 signatures)."""

    format: int
    signatures: list[Signature]
    derived: dict[str, tuple[str, ...]]


class _SignatureUnpickler(pickle.Unpickler):
    """Loads signatures only: the models and enumerations of `denpex.signatures.signature` and the
    taxonomy, and `_Parsed`; any other name is refused. The cache is this program's own file,
    but sitting in a cache folder does not make a file trusted to run code."""

    def find_class(self, module: str, name: str) -> type:
        found = _cacheable_classes().get((module, name))
        if found is None:
            raise pickle.UnpicklingError(f"the library cache names {module}.{name}")
        return found


@functools.cache
def _cacheable_classes() -> dict[tuple[str, str], type]:
    from denpex import taxonomy
    from denpex.signatures import signature

    found: dict[tuple[str, str], type] = {(__name__, _Parsed.__name__): _Parsed}
    for module in (signature, taxonomy):
        for name, value in vars(module).items():
            if (
                isinstance(value, type)
                and value.__module__ == module.__name__
                and issubclass(value, BaseModel | Enum)
            ):
                found[(module.__name__, name)] = value
    return found


_DAMAGED = (
    pickle.UnpicklingError,
    EOFError,
    ValueError,
    TypeError,
    AttributeError,
    IndexError,
    KeyError,
    MemoryError,
    RecursionError,
    UnicodeDecodeError,
)
"""What unpickling a truncated or altered cache file raises."""


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
    with paused_gc():  # some 500,000 objects, none in a reference cycle
        library = _load_one(rules_dir, include_experimental, cache_dir, include_catalogs)
        # They live as long as the process: moved out of the cyclic collector's generations, so
        # that no later collection walks them again (those walks cost a small diagnosis two
        # thirds of its time). Reference counting still frees whatever is dropped.
        gc.freeze()
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
    listing = _listing(rules_dir, include_catalogs)
    key = _stat_key(rules_dir, version, listing) if cache_dir is not None else ""
    digest = _indexed_digest(cache_dir, key)
    parsed = _cached(cache_dir, digest) if digest is not None else None
    if parsed is None:
        files = [rules_dir / family / name for family, name in listing]
        digest = _digest(rules_dir, version, files)
        parsed = _cached(cache_dir, digest)
        if parsed is None:
            signatures = _parse_all(rules_dir, files)
            parsed = _Parsed(_CACHE_FORMAT, signatures, _derived_keywords(signatures))
            _store(cache_dir, digest, parsed)
        _index(cache_dir, key, digest)
    active = [
        s
        for s in parsed.signatures
        if s.status is not Maturity.deprecated
        and (include_experimental or s.status is not Maturity.experimental)
    ]
    return _assemble(version, active, digest, derived=parsed.derived)


def _derived_keywords(signatures: list[Signature]) -> dict[str, tuple[str, ...]]:
    """The required literals of every pattern that states no keywords, by regex."""
    return {
        p.regex: tuple(required_literals(p.regex))
        for s in signatures
        for p in s.patterns
        if not p.keywords
    }


def library_of(signatures: Iterable[Signature], version: str = "draft") -> Library:
    """A library of just these signatures (a draft's back-test scans with it alone)."""
    listed = list(signatures)
    digest = hashlib.sha256(
        "".join(s.model_dump_json(exclude_defaults=True) for s in listed).encode()
    ).hexdigest()
    return _assemble(version, listed, digest)


def _assemble(
    version: str,
    signatures: list[Signature],
    digest: str,
    overlay: str | None = None,
    *,
    derived: dict[str, tuple[str, ...]] | None = None,
) -> Library:
    """The library of `signatures`; `derived`: required literals already worked out, by regex."""
    derived = derived or {}
    refs = tuple(
        PatternRef(
            signature=s,
            pattern=p,
            spec=PatternSpec(
                regex=p.regex,
                caseless=p.caseless,
                keywords=tuple(p.keywords)
                or (derived[p.regex] if p.regex in derived else tuple(required_literals(p.regex))),
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
