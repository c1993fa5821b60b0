"""Failure messages in Rust source: the texts a Rust program prints when it fails.

Shared by the catalogs whose emitter is Rust code (Text Generation Inference's launcher and router,
Hugging Face candle and the cudarc crate under it). A Rust program shows a failure as

- the Display text of an error enum, `#[error("...")]` on a variant (thiserror), which is what
  an `Err(...)` returned from `main` or logged with `{}` prints;
- a `bail!("...")` / `anyhow!("...")` (anyhow's, or a crate's own `bail!` such as candle's
  `candle::bail!`), whose text becomes the error's Display;
- a panic: `panic!("...")`, `.expect("...")` (the text, then `: ` and the error's Debug);
- a `tracing::error!` / `warn!` log record.

`messages(src)` finds, in one file's text, every such macro or attribute whose first string
argument is a literal (a log macro's `target: ...` and `field = value` arguments skipped), and
returns the literal's value (escapes decoded, a `\\` line continuation joined) with its line, the
enclosing `fn` and a level. The text is a `format!` string: `fmt` when it has a `{...}`
placeholder, else `literal`. Texts without three letters in a row are not messages.

The forms read are a regex of the opening (`start`, with named groups `kind` and, for log
macros, `lvl`) and a function of those two giving the level (`level`); `START` and `level_of`
are TGI's (error/warn records, `#[error]`, panics, `.expect`, anyhow's macros: `panic` for all
but the records and the error attributes). A catalog with other forms passes its own. Options
for code bases whose files hold more than the program: `blank_comments` leaves out what `//`
and `/* */` comments hold (doc examples), `skip_tests` the `#[cfg(test)] mod ... { }` blocks.

Nothing is decided here about what a message means; that is the mapping's job.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

# A macro or attribute whose first string argument is a message, and the level it prints at.
START = re.compile(
    r"(?P<kind>(?:tracing::)?(?P<lvl>error|warn)!\s*\(|#\[error\(|panic!\s*\(|\.expect\(|"
    r"(?:anyhow::)?(?:bail|anyhow)!\s*\()"
)
# a log macro's arguments before its format string: `target: ...,`, `field = value,`, `%field,`
FIELDS = re.compile(r"\s*(?:target\s*:\s*[^,]+,|[a-z_]+\s*=\s*[^,]+,|%?[a-z_.]+\s*,)*\s*")
ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "0": "\0"}
_RAW = re.compile(r'\s*(r(#*)")')
_PLAIN = re.compile(r'\s*"')
_CHAR = re.compile(r"'(?:[^'\\\n]|\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]{1,6}\}|.))'")
_FN = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")
_PLACEHOLDER = re.compile(r"(?<!\{)\{[^{}]*\}")
_TEST_MODULE = re.compile(
    r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{"
)


@dataclass(frozen=True)
class RustMessage:
    """One message found in a Rust file (the caller wraps it in the core Message)."""

    text: str
    style: str  # fmt | literal
    line: int
    level: str
    function: str


def string_at(src: str, pos: int) -> tuple[str, bool] | None:
    """The Rust string literal starting at `pos` (after optional whitespace): its value and
    whether it was raw; None when no literal starts there."""
    m = _RAW.match(src, pos)
    if m:
        hashes = m.group(2)
        end = src.find('"' + hashes, m.end())
        return (src[m.end() : end], True) if end >= 0 else None
    m = _PLAIN.match(src, pos)
    if not m:
        return None
    out: list[str] = []
    i = m.end()
    while i < len(src):
        c = src[i]
        if c == '"':
            return "".join(out), False
        if c == "\\" and i + 1 < len(src):
            nxt = src[i + 1]
            if nxt == "\n":  # line continuation: skip the newline and the indentation
                i += 2
                while i < len(src) and src[i] in " \t":
                    i += 1
                continue
            out.append(ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return None


def level_of(kind: str, lvl: str | None) -> str:
    """TGI's levels: a log record's own, ERROR for an error attribute, `panic` for the rest."""
    if lvl == "warn":
        return "WARN"
    if lvl == "error" or kind.startswith("#[error"):
        return "ERROR"
    return "panic"


def style_of(text: str) -> str:
    """`fmt` when the text has a `{...}` placeholder (not a `{{` escape), else `literal`."""
    return "fmt" if _PLACEHOLDER.search(text) else "literal"


def enclosing_function(src: str, pos: int) -> str:
    """The name of the last `fn` declared before `pos` ("" when none)."""
    names = _FN.findall(src, 0, pos)
    return names[-1] if names else ""


def blank_comments(src: str) -> str:
    """`src` with every comment's characters turned into spaces (its newlines kept), so that
    offsets and line numbers stay those of the file; string and char literals are left alone."""
    out: list[str] = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            end = src.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append("".join("\n" if ch == "\n" else " " for ch in src[i:j]))
            i = j
        elif c == '"' or (c == "r" and _RAW.match(src, i) and not _word_before(src, i)):
            end = _literal_end(src, i)
            out.append(src[i:end])
            i = end
        elif c == "'" and (char := _CHAR.match(src, i)):
            out.append(char.group())
            i = char.end()
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _word_before(src: str, i: int) -> bool:
    return i > 0 and (src[i - 1].isalnum() or src[i - 1] == "_")


def _literal_end(src: str, i: int) -> int:
    """The offset just past the string literal (plain or raw) that starts at `i`."""
    raw = _RAW.match(src, i)
    if raw and raw.start(1) == i:
        end = src.find('"' + raw.group(2), raw.end())
        return len(src) if end < 0 else end + 1 + len(raw.group(2))
    j = i + 1
    while j < len(src):
        if src[j] == "\\":
            j += 2
            continue
        if src[j] == '"':
            return j + 1
        j += 1
    return len(src)


def blank_tests(src: str) -> str:
    """`src` with each `#[cfg(test)] mod name { ... }` block blanked (newlines kept)."""
    out: list[str] = []
    pos = 0
    clean = blank_comments(src)
    for m in _TEST_MODULE.finditer(clean):
        if m.start() < pos:
            continue
        end = _block_end(clean, m.end() - 1)
        out.append(src[pos : m.start()])
        out.append("".join("\n" if ch == "\n" else " " for ch in src[m.start() : end]))
        pos = end
    out.append(src[pos:])
    return "".join(out)


def _block_end(src: str, open_brace: int) -> int:
    """The offset just past the `}` that closes the `{` at `open_brace` (literals skipped)."""
    depth, i = 0, open_brace
    while i < len(src):
        c = src[i]
        if c == '"' or (c == "r" and _RAW.match(src, i) and not _word_before(src, i)):
            i = _literal_end(src, i)
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(src)


def messages(
    src: str,
    start: re.Pattern[str] = START,
    level: Callable[[str, str | None], str] = level_of,
    *,
    blank: bool = False,
    skip_tests: bool = False,
) -> Iterator[RustMessage]:
    """Every message a `start` form prints in one file's text, in source order."""
    if skip_tests:
        src = blank_tests(src)
    if blank:
        src = blank_comments(src)
    for m in start.finditer(src):
        pos = m.end()
        lit = string_at(src, pos)
        lvl = m.groupdict().get("lvl")
        if lit is None and lvl:
            t = FIELDS.match(src, pos)  # skip `target: ..., field = value,` arguments
            lit = string_at(src, t.end()) if t else None
        if lit is None:
            continue
        text, _raw = lit
        if not re.search(r"[A-Za-z]{3}", text):
            continue
        line = src.count("\n", 0, m.start()) + 1
        yield RustMessage(
            text,
            style_of(text),
            line,
            level(m.group("kind"), lvl),
            enclosing_function(src, m.start()),
        )


def rust_files(root: Path, dirs: Sequence[str]) -> list[Path]:
    """The `.rs` files under each of `dirs` (relative to `root`), sorted."""
    return sorted(p for d in dirs if (root / d).is_dir() for p in (root / d).rglob("*.rs"))


def scan_rust(
    root: Path,
    dirs: Sequence[str],
    start: re.Pattern[str] = START,
    level: Callable[[str, str | None], str] = level_of,
) -> list[tuple[str, str, str, int, str, str]]:
    """(text, style, file, line, level, function) for every message in the Rust sources under
    `dirs`, files in sorted order."""
    found: list[tuple[str, str, str, int, str, str]] = []
    for path in rust_files(root, dirs):
        rel = path.relative_to(root).as_posix()
        src = path.read_text(encoding="utf-8", errors="replace")
        for m in messages(src, start, level):
            found.append((m.text, m.style, rel, m.line, m.level, m.function))
    return found
