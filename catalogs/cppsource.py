"""Failure messages in C++ source passed as macro arguments (Gloo's `GLOO_ENFORCE(cond, ...)`).

A message macro takes its text as a list of pieces that are streamed one after the other
(`GLOO_ERROR_MSG("Read error ", peer_.str(), ": ", strerror(errno))`). The text of the message is
the literal pieces in order with `{}` for each expression piece (style `brace`), the leading
arguments that are not part of the text (a condition, the two compared values) left out.
Comments are blanked first so that commented-out calls are not taken.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
_FUNCTION_START = re.compile(
    r"\b([A-Za-z_][\w:~]*)\s*\([^;{}]*\)\s*(?:const\s*)?(?:override\s*)?\{"
)
_STRINGIZED = re.compile(r"#\s*[A-Za-z_]\w*")
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "'": "'"}


@dataclass(frozen=True)
class CppMessage:
    text: str
    style: str  # brace | literal
    line: int
    level: str  # the macro's name
    function: str


def _blank_comments(src: str) -> str:
    def keep_lines(m: re.Match[str]) -> str:
        return "".join("\n" if c == "\n" else " " for c in m.group())

    # strings may contain // (URLs): blank comments outside strings only
    out: list[str] = []
    pos = 0
    for m in re.finditer(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|/\*.*?\*/', src, re.S):
        out.append(src[pos : m.start()])
        out.append(m.group() if m.group().startswith('"') else keep_lines(m))
        pos = m.end()
    out.append(src[pos:])
    return "".join(out)


def _args(src: str, start: int) -> tuple[list[str], int] | None:
    """Top-level comma-separated arguments of the call whose '(' is at start."""
    depth = 0
    args: list[str] = []
    cur: list[str] = []
    i = start
    while i < len(src):
        c = src[i]
        if c == '"':
            m = _STRING.match(src, i)
            if not m:
                return None
            cur.append(m.group())
            i = m.end()
            continue
        if c == "'":
            end = src.index("'", i + 2 if src[i + 1] == "\\" else i + 1)
            cur.append(src[i : end + 1])
            i = end + 1
            continue
        if c in "([{":
            depth += 1
            if depth == 1 and c == "(":
                i += 1
                continue
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append("".join(cur).strip())
                return args, i
        elif c == "," and depth == 1:
            args.append("".join(cur).strip())
            cur = []
            i += 1
            continue
        cur.append(c)
        i += 1
    return None


def _unescape(s: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), s)


def _piece_text(arg: str) -> tuple[str, bool]:
    """(text, is_literal) of one streamed piece: adjacent literals join, anything else is {}.

    Inside a macro body a piece may span continued lines (`\\` newline) and may start with a
    stringized macro parameter joined to literals (`#func "\\n fails with status: "`): that is
    `{}` followed by the literal text."""
    arg = re.sub(r"\\\n", " ", arg).strip()
    strings = list(_STRING.finditer(arg))
    rest = _STRING.sub("", arg).strip()
    if strings and rest == "":
        return "".join(_unescape(m.group(1)) for m in strings), True
    if strings and _STRINGIZED.fullmatch(rest) and arg.startswith("#"):
        return "{}" + "".join(_unescape(m.group(1)) for m in strings), False
    return "{}", False


def macro_messages(src: str, macros: dict[str, int]) -> list[CppMessage]:
    """Messages passed to the given macros (`macros`: name -> how many leading args to skip)."""
    clean = _blank_comments(src)
    names = "|".join(sorted(macros, key=len, reverse=True))
    found: list[CppMessage] = []
    for m in re.finditer(rf"\b({names})\s*\(", clean):
        parsed = _args(clean, m.end() - 1)
        if parsed is None:
            continue
        args = parsed[0][macros[m.group(1)] :]
        pieces = [_piece_text(a) for a in args if a]
        if not any(lit and text.strip() for text, lit in pieces):
            continue
        text = "".join(t for t, _ in pieces)
        style = "literal" if all(lit for _, lit in pieces) else "brace"
        line = clean.count("\n", 0, m.start()) + 1
        function = _enclosing_function(clean, m.start())
        found.append(CppMessage(text, style, line, m.group(1), function))
    return found


def _enclosing_function(src: str, pos: int) -> str:
    """The name of the last function body opened before pos (best effort)."""
    for m in reversed(list(_FUNCTION_START.finditer(src[:pos]))):
        name = m.group(1)
        if name not in {"if", "for", "while", "switch", "catch"}:
            return name
    return ""


def source_files(
    checkout: Path,
    suffixes: Collection[str],
    skip: tuple[str, ...],
    roots: Sequence[str] = ("src",),
    include: tuple[str, ...] = ("",),
) -> Iterator[tuple[Path, str]]:
    """The C/C++ files under each of `roots` in `checkout` with one of `suffixes`, in a stable
    order, with their path relative to the checkout; only those starting with a prefix in
    `include` (a folder, or the start of a file name), and none starting with one in `skip`."""
    for root in roots:
        for path in sorted((checkout / root).rglob("*")):
            if path.suffix not in suffixes or not path.is_file():
                continue
            rel = path.relative_to(checkout).as_posix()
            if rel.startswith(include) and not rel.startswith(skip):
                yield path, rel
