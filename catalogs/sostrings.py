"""Message fragments in a shipped shared library's read-only data, grouped by source file.

PyTorch's C++ builds its error text from pieces: `TORCH_CHECK(cond, "Timed out after ", n, " ms")`
and `LOG(ERROR) << prefix << "Watchdog caught collective operation timeout: " << work` keep each
literal piece as its own NUL-terminated string in `.rodata`, and fmt-style texts
(`"wait timeout after {}ms, keys: {}"`) survive whole. The linker lays each translation unit's
strings out together, next to the `__FILE__` path the checks embed, so the nearest path names the
source file of a piece. This module reads those pieces from an ELF file (no external tools) and
returns the ones that read like messages; it decides nothing about what they mean.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path

from catalogs.core.message import Message

_PRINTABLE = re.compile(rb"[\x20-\x7e\t]{6,}(?=\x00)")
# with line breaks: a whole multi-line format string (PaddlePaddle's PADDLE_ENFORCE texts are
# printf formats of several lines, kept whole in `.rodata`)
_PRINTABLE_LINES = re.compile(rb"[\x20-\x7e\t\n]{6,}(?=\x00)")
_MANGLED = re.compile(r"^_?Z[NLS\d]|^N\d|^P?F[vN]|^St\d|^[A-Za-z0-9_:<>,*&\s]+\(.*\)$")
_IDENT = re.compile(r"^[A-Za-z0-9_.:/<>\-\[\]=]+$")
_ASSERT = re.compile(r" INTERNAL ASSERT FAILED at \"(?P<file>[^\"]+)\":(?P<line>\d+)")


def _source_path(path: str, path_prefixes: tuple[str, ...]) -> str | None:
    """The repository-relative source path in a build path (the build root differs between
    releases: `/__w/pytorch/pytorch/`, `/pytorch/`, `../`), when it starts with a prefix."""
    for prefix in path_prefixes:
        at = path.find(prefix)
        if at == 0 or (at > 0 and path[at - 1] == "/"):
            return path[at:]
    return None


@dataclass(frozen=True)
class Fragment:
    text: str
    style: str  # brace (fmt {} placeholders) | literal
    file: str  # source path (relative to the repository root) of the nearest translation unit
    line: int  # the source line when the text names one (internal asserts), else 1 (unknown)
    level: str  # ASSERT for internal assertions, else FRAGMENT


def rodata(path: Path) -> bytes:
    """The `.rodata` section of a 64-bit little-endian ELF file."""
    data = path.read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError(f"{path}: not a 64-bit little-endian ELF file")
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    sections = [
        struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)
    ]
    names_off = sections[shstrndx][4]
    for sh in sections:
        end = data.index(b"\x00", names_off + sh[0])
        if data[names_off + sh[0] : end] == b".rodata":
            return data[sh[4] : sh[4] + sh[5]]
    raise ValueError(f"{path}: no .rodata section")


def pieces(library: Path, newlines: bool = False) -> list[str]:
    """Every NUL-terminated printable string of the library's `.rodata`, in layout order; with
    `newlines`, a string's line breaks are part of it (else only its last line is read)."""
    printable = _PRINTABLE_LINES if newlines else _PRINTABLE
    return [m.group().decode("ascii") for m in printable.finditer(rodata(library))]


def is_message(text: str) -> bool:
    """A piece that reads like (part of) a human message, not a symbol, key or path."""
    stripped = text.strip().lstrip("*")
    if len(stripped) < 12 or _MANGLED.search(stripped) or _IDENT.match(stripped):
        return False
    if stripped.startswith(("pytorch.wait_counter", "/", "../", "TORCH_", "NCCL_", "%")):
        return False
    words = re.findall(r"[A-Za-z]{2,}", stripped)
    return len(words) >= 3


def fragments(library: Path, path_prefixes: tuple[str, ...]) -> list[Fragment]:
    """Message-like pieces of the translation units whose source path starts with a prefix.

    The pieces between the first and the last string that names such a source file are taken;
    each is attributed to the nearest translation unit's source path in the layout.
    """
    texts = pieces(library)
    anchors = [
        (i, source)
        for i, p in enumerate(texts)
        if " " not in p and (source := _source_path(p, path_prefixes)) is not None
    ]
    if not anchors:
        return []
    first, last = anchors[0][0], anchors[-1][0]
    # attribute to a translation unit (a .cpp/.cu file), not to a header an inline check names
    units = [a for a in anchors if a[1].endswith((".cpp", ".cc", ".cu"))]
    found: dict[str, Fragment] = {}
    for i in range(first, last + 1):
        text = texts[i]
        assertion = _ASSERT.search(text)
        if assertion:
            file = _source_path(assertion["file"], path_prefixes)
            if file is not None:
                found.setdefault(
                    text, Fragment(text, "literal", file, int(assertion["line"]), "ASSERT")
                )
            continue
        if not is_message(text):
            continue
        nearest = min(units or anchors, key=lambda a: abs(a[0] - i))[1]
        style = "brace" if "{}" in text or re.search(r"\{:[^}]*\}", text) else "literal"
        # a piece carries no line number; 1 stands for "somewhere in this file"
        found.setdefault(text, Fragment(text, style, nearest, 1, "FRAGMENT"))
    return sorted(found.values(), key=lambda f: (f.file, f.line, f.text))


def library_messages(
    checkout: Path,
    emitter: str,
    release: str,
    libraries: tuple[str, ...],
    path_prefixes: tuple[str, ...],
    skip: tuple[str, ...] = (),
) -> list[Message]:
    """The message fragments of the shared libraries a release ships (those it does not ship
    are passed over), each text once, those from source paths starting with `skip` left out."""
    found: list[Message] = []
    seen: set[str] = set()
    for library in libraries:
        if not (checkout / library).is_file():
            continue  # a library this release does not ship
        for f in fragments(checkout / library, path_prefixes):
            if f.file.startswith(skip) or f.text in seen:
                continue
            seen.add(f.text)
            found.append(Message(emitter, release, f.text, f.style, f.file, f.line, f.level, ""))  # type: ignore[arg-type]
    return found
