"""Inputs as named byte streams: files, directories, tar/zip archives, gzip files and stdin.

Consumes the paths a user gave (or `-` for stdin); produces `Input`s, each a display name, a
path for attribution and a stream opened lazily, plus human-readable warnings for what was
skipped or read partially. Nothing is ever extracted to disk, archive member names are never
trusted, sizes are bounded, and a broken archive yields the members read before the break.
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import tarfile
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from denpex.errors import InputError, InputTooLarge, InputTooSlow

STDIN = "-"
_SNIFF = 8192
MAX_NESTING = 2
MAX_MEMBERS = 100_000
MAX_DIRECTORY_DEPTH = 64
READ_ERRORS = (OSError, EOFError, zlib.error, tarfile.TarError, zipfile.BadZipFile)


@dataclass(frozen=True)
class Input:
    """One readable log-like input. `open()` may be called once for archive members."""

    name: str
    relative: str
    size: int | None
    open: Callable[[], AbstractContextManager[BinaryIO]]
    packed: bool = False
    """Unpacked from an archive or a compressed file: its bytes count against the unpacked cap."""


DEFAULT_MAX_UNPACKED_BYTES = 16 * 1024**3


@dataclass(frozen=True)
class InputLimits:
    """Bounds on one diagnosis's reading, each a setting (`denpex.settings`). A compressed input
    can claim any size, so the bytes unpacked from archives and compressed files are capped; a
    service also sets a deadline. Members past `max_members`, archives nested past `max_nesting`
    and folders past `max_directory_depth` are skipped with a warning; a Flight Recorder dump
    over its bounds is refused with one line (`denpex.hang.dumps`)."""

    max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES
    deadline: float | None = None
    """A `time.monotonic()` value past which reading stops with an `InputError`."""
    max_members: int = MAX_MEMBERS
    """Members read from one archive."""
    max_nesting: int = MAX_NESTING
    """Archives inside archives (a .tar.gz in a .zip is 2)."""
    max_directory_depth: int = MAX_DIRECTORY_DEPTH
    """Folder levels entered below a folder given."""
    max_dump_bytes: int = 512 * 1024 * 1024
    """One Flight Recorder dump's size."""
    max_dump_containers: int = 1_000_000
    """The dicts, lists and tuples one dump could build, counted in its bytes before it is
    loaded: what bounds its memory (an empty dict costs 64 bytes for 2 bytes of JSON). At the
    bound, a JSON dump of 999,990 empty entries (12 MB) took `denpex hang` from 129 MB peak RSS
    (a real dump) to 355 MB; a real dump counts about twice its containers (a ring buffer of
    2,000 entries with 60 frames each counts some 240,000)."""
    max_dump_depth: int = 32
    """How deep one dump's containers nest (a real one nests about six deep)."""


@dataclass
class Collector:
    """Warnings gathered while walking inputs; every skip or partial read is said here. It also
    keeps the count of unpacked bytes against `limits`."""

    warnings: list[str]
    limits: InputLimits = field(default_factory=InputLimits)
    unpacked_bytes: int = 0

    def warn(self, message: str) -> None:
        self.warnings.append(message)

    def account(self, name: str, size: int, packed: bool) -> None:
        """Counts `size` bytes just read from `name`; raises InputError past a limit."""
        if packed:
            self.unpacked_bytes += size
            if self.unpacked_bytes > self.limits.max_unpacked_bytes:
                raise InputTooLarge(
                    f"{name}: archives and compressed files unpack to more than "
                    f"{self.limits.max_unpacked_bytes} bytes (the max_unpacked_bytes limit)"
                )
        if self.limits.deadline is not None and time.monotonic() > self.limits.deadline:
            raise InputTooSlow(f"{name}: reading the inputs ran past the time limit")


def _kind_of_header(header: bytes) -> str:
    if header.startswith(b"\x1f\x8b"):
        return "gzip"
    if header.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return "zip"
    if len(header) >= 262 and header[257:262] == b"ustar":
        return "tar"
    return "plain"


def safe_member_name(name: str) -> tuple[str, bool]:
    """A member name with absolute and parent parts removed, and whether it had to change."""
    path = PurePosixPath(name.replace("\\", "/"))
    parts = [p for p in path.parts if p not in ("/", "..", ".")]
    escapes = path.is_absolute() or ".." in path.parts
    return "/".join(parts) or "unnamed", escapes


@dataclass(frozen=True)
class FileRef:
    """A regular file found under the paths given: what it is shown as and what its path below
    the given folder says (attribution reads it). Its inputs are read by `inputs_of`."""

    path: str
    shown: str
    relative: str


@dataclass(frozen=True)
class StreamRef:
    """Standard input or a pipe named on the command line: read once, by whoever found it."""

    given: str


def iter_inputs(paths: list[str], stdin: BinaryIO | None, collector: Collector) -> Iterator[Input]:
    """Every input under `paths`, in a stable order, each read within the collector's limits.
    Raises InputError for a missing path and for an input past a limit."""
    for found in _walk_inputs(paths, stdin, collector):
        yield replace(found, open=_metered(found, collector))


def _metered(found: Input, collector: Collector) -> Callable[[], AbstractContextManager[BinaryIO]]:
    @contextmanager
    def open_metered() -> Iterator[BinaryIO]:
        with found.open() as stream:
            yield _Metered(stream, found.name, found.packed, collector)  # type: ignore[misc]

    return open_metered


def _walk_inputs(paths: list[str], stdin: BinaryIO | None, collector: Collector) -> Iterator[Input]:
    for ref in walk(paths, collector):
        yield from _inputs_of(ref, stdin, collector)


def walk(
    paths: list[str], collector: Collector, *, shown_as: list[str] | None = None
) -> Iterator[FileRef | StreamRef]:
    """The files (and streams) under `paths`, in the order `iter_inputs` reads them, without
    opening any; what is skipped is said in the collector's warnings, in that order too.
    `shown_as`: a name for each path to show its files under instead of the path itself (a
    node's folder, named as the job's gathered logs would name it). Raises InputError for a
    missing path."""
    for number, given in enumerate(paths):
        shown = shown_as[number] if shown_as is not None else given
        if given == STDIN:
            yield StreamRef(STDIN)
            continue
        path = Path(given)
        try:
            mode = path.stat().st_mode
        except OSError as error:
            raise InputError(f"{given}: {_no_such(error)}") from None
        if stat.S_ISDIR(mode):
            yield from _files_under(path, shown, collector)
        elif stat.S_ISREG(mode):
            yield FileRef(given, shown, path.name)
        else:
            yield StreamRef(given)


def inputs_of(
    ref: FileRef | StreamRef, stdin: BinaryIO | None, collector: Collector
) -> Iterator[Input]:
    """The inputs one file (or stream) holds (an archive holds many), read within the
    collector's limits."""
    for found in _inputs_of(ref, stdin, collector):
        yield replace(found, open=_metered(found, collector))


def _inputs_of(
    ref: FileRef | StreamRef, stdin: BinaryIO | None, collector: Collector
) -> Iterator[Input]:
    if isinstance(ref, FileRef):
        yield from _from_file(Path(ref.path), ref.shown, ref.relative, collector, depth=0)
    elif ref.given == STDIN:
        if stdin is None:
            raise InputError("'-' given but no standard input is available")
        yield from _from_stream("<stdin>", "", stdin, collector, depth=0)
    else:
        # A pipe named on the command line (`<(zcat job.log.gz)`) has a writer: read it once.
        path = Path(ref.given)
        with path.open("rb") as stream:
            yield from _from_stream(ref.given, path.name, stream, collector, depth=0)


def _no_such(error: OSError) -> str:
    if isinstance(error, FileNotFoundError):
        return "no such file or directory"
    return f"cannot be read ({error.strerror or error})"


def _files_under(root: Path, shown: str, collector: Collector) -> Iterator[FileRef]:
    """Regular files under `root`, depth-first in name order. Links that leave `root`, links to
    folders (which can loop), pipes, sockets and devices are skipped with a warning; folders
    deeper than the limits' `max_directory_depth` are not entered."""
    resolved_root = root.resolve()
    pending: list[tuple[Path, int]] = [(root, 0)]
    while pending:
        directory, depth = pending.pop()
        try:
            with os.scandir(directory) as listing:
                entries = sorted(
                    (e for e in listing if not e.name.startswith(".")), key=lambda e: e.name
                )
        except OSError as error:
            collector.warn(
                f"{_shown(shown, root, directory)}: skipped, cannot be listed "
                f"({error.strerror or error})"
            )
            continue
        subfolders: list[Path] = []
        for entry in entries:
            path = Path(entry.path)
            relative = path.relative_to(root).as_posix()
            where = f"{shown.rstrip('/')}/{relative}"
            try:
                if entry.is_dir(follow_symlinks=False):
                    subfolders.append(path)
                    continue
                if entry.is_symlink() and not path.resolve().is_relative_to(resolved_root):
                    collector.warn(f"{where}: skipped, a link that leaves {shown}")
                    continue
                mode = entry.stat().st_mode
            except (OSError, RuntimeError) as error:  # RuntimeError: a link loop in resolve()
                collector.warn(f"{where}: skipped, cannot be read ({error})")
                continue
            if stat.S_ISDIR(mode):
                collector.warn(f"{where}: skipped, a link to a folder")
            elif not stat.S_ISREG(mode):
                collector.warn(f"{where}: skipped, not a regular file (a pipe, socket or device)")
            else:
                yield FileRef(str(path), where, relative)
        if subfolders and depth + 1 > collector.limits.max_directory_depth:
            collector.warn(
                f"{_shown(shown, root, directory)}: folders below it skipped, deeper than "
                f"{collector.limits.max_directory_depth} levels (the max_directory_depth limit)"
            )
            continue
        pending.extend((folder, depth + 1) for folder in reversed(subfolders))


def _shown(shown: str, root: Path, directory: Path) -> str:
    relative = directory.relative_to(root).as_posix()
    return shown if relative == "." else f"{shown.rstrip('/')}/{relative}"


def _from_file(
    path: Path, shown: str, relative: str, collector: Collector, depth: int
) -> Iterator[Input]:
    try:
        with path.open("rb") as handle:
            header = handle.read(_SNIFF)
        size = path.stat().st_size
    except OSError as error:
        collector.warn(f"{shown}: skipped, cannot be read ({error.strerror or error})")
        return
    kind = _kind_of_header(header)
    if kind == "plain":
        yield Input(shown, relative, size, lambda: path.open("rb"))
    elif kind == "zip":
        yield from _from_zip(lambda: path.open("rb"), shown, collector, depth)
    else:
        yield from _from_tar_or_gzip(lambda: path.open("rb"), shown, relative, collector, depth)


def _from_stream(
    shown: str, relative: str, stream: BinaryIO, collector: Collector, depth: int
) -> Iterator[Input]:
    # A stream cannot be rewound, so spool it; the spool moves to disk past 64 MiB.
    with tempfile.SpooledTemporaryFile(max_size=64 * 1024 * 1024) as spool:
        try:
            while block := stream.read(1024 * 1024):
                collector.account(shown, len(block), packed=depth > 0)
                spool.write(block)
        except READ_ERRORS as error:
            collector.warn(f"{shown}: read stopped early ({error})")
        size = spool.tell()
        spool.seek(0)
        kind = _kind_of_header(spool.read(_SNIFF))

        @contextmanager
        def reopen() -> Iterator[BinaryIO]:
            spool.seek(0)
            yield spool  # type: ignore[misc]  # the spool outlives each reader

        if kind == "plain":
            yield Input(shown, relative, size, reopen, packed=depth > 0)
        elif kind == "zip":
            yield from _from_zip(reopen, shown, collector, depth)
        else:
            yield from _from_tar_or_gzip(reopen, shown, relative, collector, depth)


def _nested(
    member_shown: str, relative: str, data: BinaryIO, collector: Collector, depth: int
) -> Iterator[Input]:
    if depth + 1 > collector.limits.max_nesting:
        collector.warn(
            f"{member_shown}: skipped, archives nested deeper than "
            f"{collector.limits.max_nesting} (the max_nesting limit)"
        )
        return
    yield from _from_stream(member_shown, relative, data, collector, depth + 1)


def _from_tar_or_gzip(
    opener: Callable[[], AbstractContextManager[BinaryIO]],
    shown: str,
    relative: str,
    collector: Collector,
    depth: int,
) -> Iterator[Input]:
    with opener() as raw:
        try:
            archive = tarfile.open(fileobj=raw, mode="r|*")  # noqa: SIM115 - closed below
        except (tarfile.TarError, EOFError, TypeError):
            # Not a tar archive: a lone gzip member, or a gzip header cut short (CPython's
            # stream reader raises TypeError on one cut inside its fixed fields). The gzip
            # reader then says what is wrong with it.
            archive = None
        if archive is None:
            yield from _gzip_log(opener, shown, relative, collector)
            return
        with archive:
            yield from _tar_members(archive, shown, collector, depth)


def _gzip_log(
    opener: Callable[[], AbstractContextManager[BinaryIO]],
    shown: str,
    relative: str,
    collector: Collector,
) -> Iterator[Input]:
    @contextmanager
    def open_gzip() -> Iterator[BinaryIO]:
        with opener() as raw:
            yield gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[misc]

    yield Input(shown, relative.removesuffix(".gz"), None, open_gzip, packed=True)


def _tar_members(
    archive: tarfile.TarFile, shown: str, collector: Collector, depth: int
) -> Iterator[Input]:
    read = 0
    try:
        for member in archive:
            read += 1
            if read > collector.limits.max_members:
                collector.warn(
                    f"{shown}: stopped after {collector.limits.max_members} members "
                    "(the max_members limit)"
                )
                return
            if not member.isfile():
                if member.issym() or member.islnk():
                    collector.warn(f"{shown}!{member.name}: skipped, a link inside the archive")
                continue
            name, changed = safe_member_name(member.name)
            if changed:
                collector.warn(
                    f"{shown}!{member.name}: the name escapes the archive; read as {name!r}, "
                    "nothing is written to disk"
                )
            handle = archive.extractfile(member)
            if handle is None:
                continue
            member_shown = f"{shown}!{name}"
            head = handle.read(_SNIFF)
            body: BinaryIO = Rejoined(head, handle)
            if _kind_of_header(head) != "plain":
                yield from _nested(member_shown, name, body, collector, depth)
                continue
            yield Input(
                member_shown, name, member.size, lambda body=body: nullcontext(body), packed=True
            )
    except READ_ERRORS as error:
        collector.warn(f"{shown}: archive is damaged or truncated after {read} members ({error})")


def _from_zip(
    opener: Callable[[], AbstractContextManager[BinaryIO]],
    shown: str,
    collector: Collector,
    depth: int,
) -> Iterator[Input]:
    with opener() as raw:
        try:
            archive = zipfile.ZipFile(raw)
        except READ_ERRORS as error:
            collector.warn(f"{shown}: skipped, not a readable zip archive ({error})")
            return
        with archive:
            members = archive.infolist()
            if len(members) > collector.limits.max_members:
                collector.warn(
                    f"{shown}: read the first {collector.limits.max_members} of its "
                    f"{len(members)} members (the max_members limit)"
                )
            for info in members[: collector.limits.max_members]:
                if info.is_dir():
                    continue
                name, changed = safe_member_name(info.filename)
                if changed:
                    collector.warn(
                        f"{shown}!{info.filename}: the name escapes the archive; read as "
                        f"{name!r}, nothing is written to disk"
                    )
                member_shown = f"{shown}!{name}"
                try:
                    with archive.open(info) as handle:
                        head = handle.read(_SNIFF)
                        if _kind_of_header(head) != "plain":
                            yield from _nested(
                                member_shown, name, Rejoined(head, handle), collector, depth
                            )
                            continue
                except (*READ_ERRORS, RuntimeError, NotImplementedError) as error:
                    collector.warn(f"{member_shown}: skipped, cannot be read ({error})")
                    continue
                yield Input(
                    member_shown,
                    name,
                    info.file_size,
                    lambda info=info: archive.open(info),  # type: ignore[misc]
                    packed=True,
                )


class Rejoined(io.RawIOBase):
    """A stream whose first bytes were already read for sniffing, put back in front."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self._head = head
        self._rest = rest

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:  # type: ignore[override]
        if self._head:
            if size < 0:
                head, self._head = self._head, b""
                return head + self._rest.read()
            head, self._head = self._head[:size], self._head[size:]
            return head
        return self._rest.read(size)

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


class _Metered(io.RawIOBase):
    """A stream whose reads are counted against the collector's limits."""

    def __init__(self, stream: BinaryIO, name: str, packed: bool, collector: Collector) -> None:
        self._stream = stream
        self._name = name
        self._packed = packed
        self._collector = collector

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:  # type: ignore[override]
        data = self._stream.read(size)
        self._collector.account(self._name, len(data), self._packed)
        return data

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)
