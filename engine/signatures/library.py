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
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields, replace
from enum import Enum
from importlib import resources
from itertools import accumulate
from pathlib import Path
from typing import overload

import yaml
from pydantic import BaseModel, ValidationError

from denpex.bulk import paused_gc
from denpex.errors import RulesError
from denpex.signatures.backends import PatternSpec, building
from denpex.signatures.keywords import required_literals
from denpex.signatures.signature import Maturity, Pattern, Role, Signature


class PatternRef:
    """Where a flattened pattern came from: its signature and its index in that signature.

    The scanners need only `spec` and `role`; the signature is looked up in the library's
    sequence when a match asks for it, so a library read from its cache unpickles the few
    signatures a log meets, not all of them."""

    __slots__ = ("_pattern_index", "_signature_index", "_signatures", "role", "spec")

    def __init__(
        self,
        signatures: Sequence[Signature],
        signature_index: int,
        pattern_index: int,
        spec: PatternSpec,
        role: Role,
    ) -> None:
        self._signatures = signatures
        self._signature_index = signature_index
        self._pattern_index = pattern_index
        self.spec = spec
        self.role = role

    @property
    def signature(self) -> Signature:
        return self._signatures[self._signature_index]

    @property
    def signature_id(self) -> str:
        """The signature's id; a cached library's without unpickling the signature."""
        return _id_at(self._signatures, self._signature_index)

    @property
    def pattern(self) -> Pattern:
        return self.signature.patterns[self._pattern_index]

    def __repr__(self) -> str:
        return f"PatternRef({self.signature.id!r}, {self._pattern_index})"


@dataclass(frozen=True)
class Library:
    version: str
    digest: str
    signatures: Sequence[Signature] = field(repr=False)
    """A tuple, or a `SignatureStore` when the library was read from its cache."""
    patterns: tuple[PatternRef, ...] = field(repr=False)
    overlay: str | None = None
    """The overlay's version and digest (`3+0a1b2c3d4e5f`) when an overlay is loaded."""
    added_from: int | None = None
    """Where the patterns of signatures added to the packaged ones (an overlay's, a draft's)
    begin in `patterns`, or None when none were added: a matcher compiles the two parts apart,
    so the packaged library's compiled database is reused whatever is added."""

    @property
    def label(self) -> str:
        """Version and digest (and the overlay's), as recorded in every diagnosis."""
        base = f"{self.version}+{self.digest[:12]}"
        return f"{base} overlay {self.overlay}" if self.overlay else base

    def by_id(self) -> dict[str, Signature]:
        return {s.id: s for s in self.signatures}

    def ids(self) -> list[str]:
        """Every signature's id, in order. A cached library's come from its index: `by_id`
        unpickles all 50,000 signatures (seconds), which a check for a taken id does not need."""
        return _ids_of(self.signatures)

    def without_families(self, families: Iterable[str]) -> Library:
        """This library less the signatures of `families`, its patterns in the same order. Each
        kept pattern keeps its scanner spec: deriving the required literals of 50,000 regexes
        again cost seconds per call (an evaluation withholds each family in turn)."""
        dropped = set(families)
        return self._keeping(lambda signature_id: signature_id.split(".", 1)[0] not in dropped)

    def without(self, ids: Iterable[str]) -> Library:
        """This library less the signatures with these ids (an ablation); its digest says
        what was left out."""
        dropped = set(ids)
        hasher = hashlib.sha256(self.digest.encode())
        for signature_id in sorted(dropped):
            hasher.update(f"\0-{signature_id}".encode())
        kept = self._keeping(lambda signature_id: signature_id not in dropped)
        return replace(kept, digest=hasher.hexdigest()) if dropped else kept

    def _keeping(self, keep: Callable[[str], bool]) -> Library:
        """This library with the signatures whose ids `keep` accepts, told by their ids: a
        cached library's kept signatures stay in its cache file, unpickled when first asked
        for (reading all of them to drop a family cost seconds per library)."""
        ids = self.ids()
        positions = [i for i, signature_id in enumerate(ids) if keep(signature_id)]
        kept = _Picked(self.signatures, positions)
        position = {ids[p]: i for i, p in enumerate(positions)}
        patterns = []
        for ref in self.patterns:
            index = position.get(ref.signature_id)
            if index is not None:
                patterns.append(PatternRef(kept, index, ref._pattern_index, ref.spec, ref.role))
        return Library(
            version=self.version,
            digest=self.digest,
            signatures=kept,
            patterns=tuple(patterns),
            overlay=self.overlay,
        )

    def with_signatures(self, extra: Iterable[Signature], overlay: str | None = None) -> Library:
        """This library and `extra` (an overlay's or a draft's signatures); an id already in
        the library is refused. The digest stays the packaged library's; `overlay` names what
        was added."""
        added = list(extra)
        known = set(self.ids())
        for signature in added:
            if signature.id in known:
                raise RulesError(f"signature {signature.id} is already in the library")
            known.add(signature.id)
        extra = _assemble(self.version, added, self.digest)
        return Library(
            version=self.version,
            digest=self.digest,
            signatures=_Picked(self.signatures, range(len(self.signatures)), extra.signatures),
            patterns=(*self.patterns, *extra.patterns),
            overlay=overlay or self.overlay,
            added_from=len(self.patterns) if self.added_from is None else self.added_from,
        )


def _id_at(signatures: Sequence[Signature], index: int) -> str:
    if isinstance(signatures, SignatureStore | _Picked):
        return signatures.id_at(index)
    return signatures[index].id


def _ids_of(signatures: Sequence[Signature]) -> list[str]:
    if isinstance(signatures, SignatureStore):
        return list(signatures.ids())
    if isinstance(signatures, _Picked):
        return [signatures.id_at(i) for i in range(len(signatures))]
    return [s.id for s in signatures]


class _LazySignatures(Sequence[Signature]):
    """A library's signatures read when first asked for, which stand for the tuple of the same
    signatures: equal to it, unhashable like a list of them, and pickled as that tuple (what
    they are read from, an open cache file or another library, does not travel)."""

    def _at(self, index: int) -> Signature:
        """The signature at position `index`, read if it was not yet."""
        raise NotImplementedError

    @overload
    def __getitem__(self, index: int) -> Signature: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Signature, ...]: ...
    def __getitem__(self, index: int | slice) -> Signature | tuple[Signature, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        return self._at(index)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # equal to a tuple of the same signatures

    def __reduce__(self) -> tuple[type[tuple[Signature, ...]], tuple[tuple[Signature, ...]]]:
        return (tuple, (tuple(self),))


class _Picked(_LazySignatures):
    """Signatures picked from another library's (a family left out, an overlay added), each
    read from where it is when first asked for: a cached library's stay unread in its file.
    Unpickling all 50,000 to drop a family or add one draft cost seconds per library."""

    def __init__(
        self,
        signatures: Sequence[Signature],
        positions: Iterable[int],
        added: Sequence[Signature] = (),
    ) -> None:
        picks: list[tuple[Sequence[Signature], int]] = []
        for position in positions:
            if isinstance(signatures, _Picked):  # flattened: each pick names where it lives
                picks.append(signatures._picks[position])
            else:
                picks.append((signatures, position))
        picks.extend((added, i) for i in range(len(added)))
        self._picks = picks

    def __len__(self) -> int:
        return len(self._picks)

    def _at(self, index: int) -> Signature:
        signatures, position = self._picks[index]
        return signatures[position]

    def id_at(self, index: int) -> str:
        signatures, position = self._picks[index]
        return _id_at(signatures, position)

    def __iter__(self) -> Iterator[Signature]:
        with paused_gc():  # as SignatureStore's: reading many with the collector on is slow
            for index in range(len(self)):
                self[index]
        return (self[i] for i in range(len(self)))


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


def _digest(rules_dir: Path, version: str, files: list[Path]) -> tuple[str, list[str]]:
    """The library's content digest, and each file's own (what a cached library records of the
    file each signature was parsed from, so that another library can reuse it)."""
    hasher = hashlib.sha256(version.encode())
    contents: list[str] = []
    for path in files:
        data = path.read_bytes()
        hasher.update(path.relative_to(rules_dir).as_posix().encode())
        hasher.update(data)
        contents.append(hashlib.sha256(data).hexdigest())
    return hasher.hexdigest(), contents


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


_CACHE_FORMAT = 5
"""Raised when what the cache holds changes shape; an older cache file is then not read.
5: each signature's source file and that file's content hash, for reuse by other libraries."""

_MAGIC = b"denpexL5"
"""The first bytes of a cache file: the format, then the index's length (8 bytes, big end)."""


def _cache_file(cache_dir: Path, digest: str) -> Path:
    """Where the parsed library of `digest` is kept. The name also holds the schema the
    signatures were validated against (this package's signature models and taxonomy) and the
    code that derived their patterns' keywords: loading from the cache does not validate or
    derive again, so a changed schema must not find an old file."""
    return cache_dir / f"library-{digest}-{_schema_key()}.pickle"


@functools.cache
def _schema_key() -> str:
    from denpex.signatures import keywords, signature

    hasher = hashlib.sha256(str(_CACHE_FORMAT).encode())
    hasher.update(Path(signature.__file__).read_bytes())
    # The keywords derived from each regex are kept in the cache and, since format 5, carried
    # from one cached library into the next: a change to their derivation must not find them.
    hasher.update(Path(keywords.__file__).read_bytes())
    hasher.update(resources.files("denpex").joinpath("taxonomy.yaml").read_bytes())
    return hasher.hexdigest()[:16]


class SignatureStore(_LazySignatures):
    """A cached library's signatures, each unpickled when first asked for.

    A diagnosis meets a few dozen of the library's 30,000 signatures; unpickling all of them
    was most of a small diagnosis's start-up. Each signature is its own pickle at a recorded
    offset of the cache file, read with `pread` from the file this store opened: a cache
    written again meanwhile replaces the file, so the open one still holds what was indexed.
    Iterating, or comparing with another sequence, reads them all."""

    def __init__(
        self,
        cache: io.FileIO,
        base: int,
        offsets: Sequence[int],
        kept: list[int],
        sources: Sequence[str],
    ) -> None:
        self._cache = cache
        weakref.finalize(self, cache.close)  # the file lives as long as the store
        self._base = base
        self._offsets = offsets
        self._sources = sources
        self._kept = kept
        """Which of the cache's signatures this library holds (the active ones), in order."""
        self._loaded: list[Signature | None] = [None] * len(kept)
        self._ids: list[str] | None = None

    def id_at(self, index: int) -> str:
        """The id of signature `index`, unread: its file's path (the id equals it)."""
        return self.ids()[index]

    def ids(self) -> list[str]:
        if self._ids is None:  # two threads may both build it; either result is the same
            self._ids = [
                f"{family}.{name.removesuffix('.yaml')}"
                for family, _, name in (self._sources[k].partition("/") for k in self._kept)
            ]
        return self._ids

    def __len__(self) -> int:
        return len(self._kept)

    def _at(self, index: int) -> Signature:
        loaded = self._loaded[index]
        if loaded is None:  # two threads may both unpickle it; either result is the same
            loaded = self._loaded[index] = self._read(self._kept[index])
        return loaded

    def _read(self, position: int) -> Signature:
        start, end = self._offsets[position], self._offsets[position + 1]
        try:
            piece = os.pread(self._cache.fileno(), end - start, self._base + start)
            if len(piece) != end - start:
                raise EOFError("short read")
            signature = _SignatureUnpickler(io.BytesIO(piece)).load()
        except (OSError, *_DAMAGED) as error:
            raise RulesError(
                f"the library cache {self._cache.name} changed while in use ({error}); "
                "delete it and run again"
            ) from None
        if not isinstance(signature, Signature):
            raise RulesError(f"the library cache {self._cache.name} holds a {type(signature)}")
        return signature

    def __iter__(self) -> Iterator[Signature]:
        if any(loaded is None for loaded in self._loaded):
            # All of them: with the cyclic collector paused, which otherwise walks the growing
            # heap again and again (four fifths of the time to read 30,000).
            with paused_gc():
                for index in range(len(self)):
                    self[index]
        return (self[i] for i in range(len(self)))


def _unpickled(piece: bytes) -> Signature:
    """A signature that was parsed here or read whole from a cache file this process checked."""
    signature = _SignatureUnpickler(io.BytesIO(piece)).load()
    if not isinstance(signature, Signature):
        raise RulesError(f"a library cache holds a {type(signature)}")
    return signature


@dataclass(frozen=True)
class _Index:
    """The plain-data head of a cache file: what the scanners need of every pattern and what
    `load_library` needs of every signature, without unpickling a single model."""

    status: list[str]
    """Each signature's maturity."""
    offsets: list[int]
    """Where each signature's pickle starts after the index, and where the last ends."""
    pattern_signature: list[int]
    pattern_index: list[int]
    regex: list[str]
    caseless: list[bool]
    keywords: list[tuple[str, ...]]
    role: list[str]
    sources: list[str]
    """Each signature's file, `<family>/<name>.yaml`, relative to its rules folder."""
    contents: list[str]
    """The SHA-256 of that file's bytes when it was parsed."""


def _cached(cache_dir: Path | None, digest: str) -> tuple[io.FileIO, int, _Index] | None:
    """The open cache file of `digest`, where its signatures start, and its index."""
    if cache_dir is None:
        return None
    return _cached_file(_cache_file(cache_dir, digest))


def _cached_file(path: Path) -> tuple[io.FileIO, int, _Index] | None:
    try:
        cache = io.FileIO(path, "r")
    except OSError:
        return None
    try:
        head = cache.read(len(_MAGIC) + 8)
        if head[: len(_MAGIC)] != _MAGIC or len(head) != len(_MAGIC) + 8:
            raise EOFError("not a library cache")
        length = int.from_bytes(head[len(_MAGIC) :], "big")
        data = cache.read(length)
        if len(data) != length:
            raise EOFError("short index")
        index = _Index(*_PlainUnpickler(io.BytesIO(data)).load())
        base = len(head) + length
        if base + index.offsets[-1] != os.fstat(cache.fileno()).st_size:
            raise EOFError("cut short or grown: not the file that was written")
    except (OSError, *_DAMAGED):
        cache.close()
        return None  # a missing or damaged cache is rebuilt, never trusted
    return cache, base, index


@dataclass(frozen=True)
class _Entry:
    """One signature as a cache file holds it: its pickle and its index rows. Parsed here, or
    taken as it is from another cached library that parsed the same file."""

    source: str
    content: str
    status: str
    piece: bytes
    patterns: list[tuple[int, str, bool, tuple[str, ...], str]]
    """(index in the signature, regex, caseless, keywords, role) of each of its patterns."""


def _parsed_entries(
    signatures: list[Signature], sources: list[str], contents: list[str]
) -> list[_Entry]:
    derived = _derived_keywords(signatures)
    return [
        _Entry(
            source=source,
            content=content,
            status=s.status.value,
            piece=pickle.dumps(s, protocol=5),
            patterns=[
                (j, p.regex, p.caseless, tuple(p.keywords) or derived[p.regex], s.role.value)
                for j, p in enumerate(s.patterns)
            ],
        )
        for s, source, content in zip(signatures, sources, contents, strict=True)
    ]


def _store(cache_dir: Path | None, digest: str, entries: list[_Entry]) -> None:
    if cache_dir is None:
        return
    rows = [(i, row) for i, entry in enumerate(entries) for row in entry.patterns]
    index = _Index(
        status=[e.status for e in entries],
        offsets=list(accumulate((len(e.piece) for e in entries), initial=0)),
        pattern_signature=[i for i, _ in rows],
        pattern_index=[row[0] for _, row in rows],
        regex=[row[1] for _, row in rows],
        caseless=[row[2] for _, row in rows],
        keywords=[row[3] for _, row in rows],
        role=[row[4] for _, row in rows],
        sources=[e.source for e in entries],
        contents=[e.content for e in entries],
    )
    # Plain lists in field order: `_cached` reads them back without unpickling a class.
    head = pickle.dumps([getattr(index, f.name) for f in fields(index)], protocol=5)
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        target = _cache_file(cache_dir, digest)
        temporary = target.with_suffix(f".{os.getpid()}.tmp")
        with temporary.open("wb") as out:
            out.write(_MAGIC + len(head).to_bytes(8, "big") + head)
            for entry in entries:
                out.write(entry.piece)
        temporary.replace(target)
    except OSError:
        pass  # caching is an optimisation; a read-only home must not stop a diagnosis


REUSED_FROM = 4
"""How many cached libraries (the newest) a library not in the cache looks in for files it
shares with them."""


def _reusable(
    cache_dir: Path | None, wanted: set[tuple[str, str]]
) -> dict[tuple[str, str], _Entry]:
    """The entries of other cached libraries (of this schema) parsed from the same file, by
    (file, content hash). A variant of a library (one family left out, a folder added, one
    file edited) then parses only the files that differ, not all 50,000: a signature depends
    on nothing but its file's bytes and its path (the id must equal it), both in the key."""
    if cache_dir is None or not wanted:
        return {}
    try:
        candidates = sorted(
            cache_dir.glob(f"library-*-{_schema_key()}.pickle"),
            key=lambda path: path.stat().st_mtime_ns,
            reverse=True,
        )[:REUSED_FROM]
    except OSError:
        return {}
    found: dict[tuple[str, str], _Entry] = {}
    for candidate in candidates:
        cached = _cached_file(candidate)
        if cached is None:
            continue
        cache, base, index = cached
        with cache:
            rows: dict[int, list[int]] = {}
            for row, owner in enumerate(index.pattern_signature):
                rows.setdefault(owner, []).append(row)
            for i, key in enumerate(zip(index.sources, index.contents, strict=True)):
                if key not in wanted or key in found:
                    continue
                start, end = index.offsets[i], index.offsets[i + 1]
                try:
                    piece = os.pread(cache.fileno(), end - start, base + start)
                except OSError:
                    break
                if len(piece) != end - start:
                    break  # replaced or cut meanwhile: what it holds is parsed instead
                found[key] = _Entry(
                    source=key[0],
                    content=key[1],
                    status=index.status[i],
                    piece=piece,
                    patterns=[
                        (
                            index.pattern_index[r],
                            index.regex[r],
                            index.caseless[r],
                            index.keywords[r],
                            index.role[r],
                        )
                        for r in rows.get(i, [])
                    ],
                )
        if len(found) == len(wanted):
            break
    return found


def _entries(
    rules_dir: Path, cache_dir: Path | None, listing: list[tuple[str, str]], contents: list[str]
) -> list[_Entry]:
    """Every file's entry, in listing order: reused where another cached library parsed the same
    bytes at the same path, parsed (and validated) otherwise."""
    sources = [f"{family}/{name}" for family, name in listing]
    reused = _reusable(cache_dir, set(zip(sources, contents, strict=True)))
    missing = [i for i, key in enumerate(zip(sources, contents, strict=True)) if key not in reused]
    parsed = _parsed_entries(
        _parse_all(rules_dir, [rules_dir / sources[i] for i in missing]),
        [sources[i] for i in missing],
        [contents[i] for i in missing],
    )
    _unique_ids(rules_dir, listing)
    entries = [reused.get(key) for key in zip(sources, contents, strict=True)]
    for i, entry in zip(missing, parsed, strict=True):
        entries[i] = entry
    return [entry for entry in entries if entry is not None]


def _parse_all(rules_dir: Path, files: list[Path]) -> list[Signature]:
    signatures = [load_signature(path, rules_dir) for path in files]
    _unique_ids(rules_dir, [(path.parent.name, path.name) for path in files])
    return signatures


def _unique_ids(rules_dir: Path, listing: list[tuple[str, str]]) -> None:
    """Each id equals its path (checked when its file was parsed), so two files that claim one
    id are found from their paths alone (`a/b.c.yaml` and `a.b/c.yaml` are both `a.b.c`),
    reused signatures among them."""
    seen: dict[str, str] = {}
    for family, name in listing:
        signature_id = f"{family}.{name.removesuffix('.yaml')}"
        if signature_id in seen:
            raise RulesError(
                f"{rules_dir / family / name}: id {signature_id} already used by "
                f"{rules_dir / seen[signature_id]}"
            )
        seen[signature_id] = f"{family}/{name}"


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


class _SignatureUnpickler(pickle.Unpickler):
    """Loads signatures only: the models and enumerations of `denpex.signatures.signature` and the
    taxonomy; any other name is refused. The cache is this program's own file,
    but sitting in a cache folder does not make a file trusted to run code."""

    def find_class(self, module: str, name: str) -> type:
        found = _cacheable_classes().get((module, name))
        if found is None:
            raise pickle.UnpicklingError(f"the library cache names {module}.{name}")
        return found


class _PlainUnpickler(pickle.Unpickler):
    """Loads a cache file's index: lists, tuples, strings, numbers; no class of any kind."""

    def find_class(self, module: str, name: str) -> type:
        raise pickle.UnpicklingError(f"the library cache's index names {module}.{name}")


@functools.cache
def _cacheable_classes() -> dict[tuple[str, str], type]:
    from denpex import taxonomy
    from denpex.signatures import signature

    found: dict[tuple[str, str], type] = {}
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
    cached = _cached(cache_dir, digest) if digest is not None else None
    if cached is None:
        files = [rules_dir / family / name for family, name in listing]
        digest, contents = _digest(rules_dir, version, files)
        cached = _cached(cache_dir, digest)
        if cached is None:
            with building(_cache_file(cache_dir, digest) if cache_dir is not None else None):
                cached = _cached(cache_dir, digest)  # another process may have just written it
                if cached is None and cache_dir is None:
                    signatures = _parse_all(rules_dir, files)
                    return _assemble(version, _active(signatures, include_experimental), digest)
                if cached is None:
                    entries = _entries(rules_dir, cache_dir, listing, contents)
                    _store(cache_dir, digest, entries)
                    cached = _cached(cache_dir, digest)
                    if cached is None:  # a cache folder that cannot be written
                        signatures = [_unpickled(e.piece) for e in entries]
                        return _assemble(version, _active(signatures, include_experimental), digest)
        _index(cache_dir, key, digest)
    return _from_cache(version, digest, *cached, include_experimental)


def _active(signatures: list[Signature], include_experimental: bool) -> list[Signature]:
    left_out = _left_out(include_experimental)
    return [s for s in signatures if s.status.value not in left_out]


def _left_out(include_experimental: bool) -> frozenset[str]:
    """The maturities a diagnosis leaves out."""
    if include_experimental:
        return frozenset({Maturity.deprecated.value})
    return frozenset({Maturity.deprecated.value, Maturity.experimental.value})


def _from_cache(
    version: str,
    digest: str,
    cache: io.FileIO,
    base: int,
    index: _Index,
    include_experimental: bool,
) -> Library:
    """The library a cache file holds: the patterns from its index, the signatures read on
    demand."""
    left_out = _left_out(include_experimental)
    kept = [i for i, status in enumerate(index.status) if status not in left_out]
    store = SignatureStore(cache, base, index.offsets, kept, index.sources)
    position = {signature: i for i, signature in enumerate(kept)}
    roles = {role.value: role for role in Role}
    refs = tuple(
        PatternRef(
            store,
            position[owner],
            index.pattern_index[i],
            PatternSpec(index.regex[i], index.caseless[i], index.keywords[i]),
            roles[index.role[i]],
        )
        for i, owner in enumerate(index.pattern_signature)
        if owner in position
    )
    return Library(version=version, digest=digest, signatures=store, patterns=refs)


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
) -> Library:
    """The library of `signatures`, parsed or built in this process."""
    kept = tuple(signatures)
    refs = tuple(
        PatternRef(
            kept,
            i,
            j,
            PatternSpec(
                regex=p.regex,
                caseless=p.caseless,
                keywords=tuple(p.keywords) or tuple(required_literals(p.regex)),
            ),
            s.role,
        )
        for i, s in enumerate(kept)
        for j, p in enumerate(s.patterns)
    )
    return Library(
        version=version,
        digest=digest,
        signatures=kept,
        patterns=refs,
        overlay=overlay,
    )
