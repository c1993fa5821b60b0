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

import bisect
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
    found = literal_at(src, pos)
    return None if found is None else (found[0], found[1])


def literal_at(src: str, pos: int) -> tuple[str, bool, int] | None:
    """As `string_at`, with the offset just past the literal's closing quote."""
    m = _RAW.match(src, pos)
    if m:
        hashes = m.group(2)
        end = src.find('"' + hashes, m.end())
        return (src[m.end() : end], True, end + 1 + len(hashes)) if end >= 0 else None
    m = _PLAIN.match(src, pos)
    if not m:
        return None
    out: list[str] = []
    i = m.end()
    while i < len(src):
        c = src[i]
        if c == '"':
            return "".join(out), False, i + 1
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


class _Functions:
    """`enclosing_function` for many offsets of one text: the `fn` declarations found once."""

    def __init__(self, src: str) -> None:
        found = [(m.start(), m.end(), m.group(1)) for m in _FN.finditer(src)]
        self.ends = [end for _start, end, _name in found]
        self.names = [name for _start, _end, name in found]
        self.newlines = [m.start() for m in re.finditer("\n", src)]

    def at(self, pos: int) -> str:
        index = bisect.bisect_right(self.ends, pos)
        return self.names[index - 1] if index else ""

    def line(self, pos: int) -> int:
        return bisect.bisect_left(self.newlines, pos) + 1


_TOKEN = re.compile(
    r"//[^\n]*|/\*|(?<![\w])b?r(#*)\"|\"|'(?:[^'\\\n]|\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]{1,6}\}|.))'"
)
_PLAIN_BODY = re.compile(r'(?:[^"\\]|\\.)*"', re.S)
_BLOCK_MARK = re.compile(r"/\*|\*/")


def _spaces(text: str) -> str:
    return re.sub(r"[^\n]", " ", text)


def blank_comments(src: str) -> str:
    """`src` with every comment's characters turned into spaces (its newlines kept), so that
    offsets and line numbers stay those of the file; string and char literals are left alone."""
    out: list[str] = []
    pos, n = 0, len(src)
    while pos < n:
        m = _TOKEN.search(src, pos)
        if m is None:
            break
        out.append(src[pos : m.start()])
        token = m.group()
        if token.startswith("//"):
            out.append(" " * len(token))
            pos = m.end()
        elif token == "/*":
            depth, end = 1, n
            for mark in _BLOCK_MARK.finditer(src, m.end()):
                depth += 1 if mark.group() == "/*" else -1
                if depth == 0:
                    end = mark.end()
                    break
            out.append(_spaces(src[m.start() : end]))
            pos = end
        elif token == '"':
            body = _PLAIN_BODY.match(src, m.end())
            end = body.end() if body else n
            out.append(src[m.start() : end])
            pos = end
        elif token.endswith('"'):  # a raw string: up to `"` and as many `#` as it opened with
            close = src.find('"' + (m.group(1) or ""), m.end())
            end = n if close < 0 else close + 1 + len(m.group(1) or "")
            out.append(src[m.start() : end])
            pos = end
        else:  # a char literal
            out.append(token)
            pos = m.end()
    out.append(src[pos:])
    return "".join(out)


def _word_before(src: str, i: int) -> bool:
    return i > 0 and (src[i - 1].isalnum() or src[i - 1] == "_")


def _literal_end(src: str, i: int) -> int:
    """The offset just past the string literal (plain or raw) that starts at `i`."""
    raw = _RAW.match(src, i)
    if raw and raw.start(1) == i:
        end = src.find('"' + raw.group(2), raw.end())
        return len(src) if end < 0 else end + 1 + len(raw.group(2))
    body = _PLAIN_BODY.match(src, i + 1)
    return body.end() if body else len(src)


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
    functions = _Functions(src)
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
        yield RustMessage(
            text,
            style_of(text),
            functions.line(m.start()),
            level(m.group("kind"), lvl),
            functions.at(m.start()),
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


_ENUM = re.compile(r"\benum\s+([A-Za-z_]\w*)\s*(?:<[^>{]*>)?\s*\{")
_ERROR_ATTR = re.compile(r"#\[error\(")
_VARIANT = re.compile(r"\s*\)\]\s*(?:(?:#\[[^\]]*\]|///[^\n]*|//[^\n]*)\s*)*([A-Z]\w*)")
_MEMBER = re.compile(r"^[ \t]*([A-Za-z_]\w*)\s*=\s*[-\w]+\s*,?[ \t]*$", re.M)


def enum_members(src: str, name: str) -> list[tuple[str, int]]:
    """The members of every `enum <name> { A = 1, ... }` in `src` (bindgen writes one per CUDA
    version, each under its `#[cfg(...)]`), each name once with the line of its first
    appearance, in that order."""
    seen: dict[str, int] = {}
    for m in _ENUM.finditer(src):
        if m.group(1) != name:
            continue
        end = _block_end(src, m.end() - 1)
        for member in _MEMBER.finditer(src, m.end(), end - 1):
            seen.setdefault(member.group(1), src.count("\n", 0, member.start(1)) + 1)
    return list(seen.items())


def error_variants(src: str) -> list[tuple[str, str, str, int]]:
    """(enum, variant, format, line) for every variant of an error enum in `src` whose
    `#[error("...")]` (thiserror) carries a literal format (not `transparent`)."""
    clean = blank_comments(src)
    lines = _Functions(clean)
    found: list[tuple[str, str, str, int]] = []
    enums = [
        (m.group(1), m.end() - 1, _block_end(clean, m.end() - 1)) for m in _ENUM.finditer(clean)
    ]
    for attr in _ERROR_ATTR.finditer(clean):
        lit = literal_at(src, attr.end())
        if lit is None:
            continue
        variant = _VARIANT.match(clean, lit[2])
        owner = [name for name, start, end in enums if start < attr.start() < end]
        if variant and owner:
            found.append((owner[-1], variant.group(1), lit[0], lines.line(attr.start())))
    return found


def error_formats(src: str) -> dict[tuple[str, str], str]:
    """(enum, variant) -> the `#[error("...")]` format of that variant (see `error_variants`)."""
    found: dict[tuple[str, str], str] = {}
    for enum, variant, fmt, _line in error_variants(src):
        found.setdefault((enum, variant), fmt)
    return found


_CONSTRUCTOR = re.compile(r"\b([A-Z]\w*)::([A-Z]\w*)\s*([({])")
_FIELD = re.compile(r"\b([a-z_]\w*)\s*:\s*(?:format!\s*\(\s*)?(?=r#*\"|\")")
_FORMAT_CALL = re.compile(r"\s*format!\s*\(")
_WORD = re.compile(r"[A-Za-z]{3,}")


def _generic(fmt: str) -> bool:
    """Whether a format's literal text alone has fewer than three words of 3+ letters."""
    return len(_WORD.findall(_PLACEHOLDER.sub(" ", fmt))) < 3


def _escape_braces(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def constructed(
    src: str,
    formats: dict[tuple[str, str], str],
    level: str,
    *,
    skip_tests: bool = True,
) -> Iterator[RustMessage]:
    """The texts built where code constructs an error variant whose own format is too generic
    to read alone, filling its placeholders from the string literals passed for them:
    `CudaError::InternalError("dtype mismatch in matmul op")` prints `internal error 'dtype
    mismatch in matmul op'`, `Error::Msg(format!("..."))` the format itself, and
    `Error::UnexpectedDType { msg: "...", expected, got }` `"<msg>, expected: {expected:?}, got:
    {got:?}"`. Only a `{name}` (Display) placeholder is filled; a `format!` argument stays a
    format, a plain literal's braces are escaped."""
    if skip_tests:
        src = blank_tests(src)
    src = blank_comments(src)
    functions = _Functions(src)
    for m in _CONSTRUCTOR.finditer(src):
        fmt = formats.get((m.group(1), m.group(2)))
        if fmt is None or not _generic(fmt):
            continue
        values: dict[str, str] = {}
        if m.group(3) == "(":
            pos = m.end()
            call = _FORMAT_CALL.match(src, pos)
            lit = literal_at(src, call.end() if call else pos)
            if lit is not None:
                values["0"] = lit[0] if call else _escape_braces(lit[0])
        else:
            end = _block_end(src, m.end() - 1)
            depth_ok = src.find("{", m.end(), end - 1) < 0  # a flat `{ field: value, ... }`
            for field in _FIELD.finditer(src, m.end(), end) if depth_ok else ():
                lit = literal_at(src, field.end())
                if lit is not None:
                    formatted = "format!" in src[field.start() : field.end()]
                    values[field.group(1)] = lit[0] if formatted else _escape_braces(lit[0])
        text = fmt
        for name, value in values.items():
            text = text.replace("{" + name + "}", value)
        if text == fmt or not re.search(r"[A-Za-z]{3}", text):
            continue
        yield RustMessage(
            text, style_of(text), functions.line(m.start()), level, functions.at(m.start())
        )
