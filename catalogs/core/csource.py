"""Reading format strings out of C and C++ source: calls such as `WARN("...%s...", x)`.

Consumes a source file's text; produces the calls of the named logging macros or functions
with their line and their format argument as one string: adjacent string literals joined,
escapes decoded, `PRIu64`-style macros replaced by their conversion, and any other token
between literals (a stringified macro argument, `NCCL_VERSION_STRING`) kept as a `%s`, since
the program prints some text there. Comments are skipped; a call whose format is not a
literal (a variable) yields no text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

_INTTYPES_MACRO = re.compile(r"^PRI([diuxXo])(8|16|32|64|MAX|PTR|LEAST\d+|FAST\d+)$")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}
_TOKEN = re.compile(
    r'(?P<string>(?:u8|[uUL])?"(?:[^"\\\n]|\\.)*")'
    r"|(?P<char>'(?:[^'\\\n]|\\.)+')"
    r"|(?P<comment>//[^\n]*|/\*.*?\*/)"
    r"|(?P<open>[(\[{])|(?P<close>[)\]}])|(?P<comma>,)"
    r"|(?P<word>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<newline>\n)|(?P<other>[^\s])",
    re.DOTALL,
)


@dataclass(frozen=True, slots=True)
class Call:
    name: str
    line: int
    args: tuple[str, ...]
    """each argument's format text when it is (made of) string literals, else ''"""


def decode_literal(body: str) -> str:
    """A C string literal's contents (between the quotes) as the program holds them."""
    out: list[str] = []
    index = 0
    while index < len(body):
        char = body[index]
        if char != "\\" or index + 1 >= len(body):
            out.append(char)
            index += 1
            continue
        nxt = body[index + 1]
        if nxt in _ESCAPES and not (nxt == "0" and body[index + 2 : index + 3].isdigit()):
            out.append(_ESCAPES[nxt])
            index += 2
        elif nxt == "x":
            digits = re.match(r"[0-9a-fA-F]{1,2}", body[index + 2 :])
            out.append(chr(int(digits.group(0), 16)) if digits else "x")
            index += 2 + (len(digits.group(0)) if digits else 0)
        elif nxt in "01234567":
            digits = re.match(r"[0-7]{1,3}", body[index + 1 :])
            assert digits is not None
            out.append(chr(int(digits.group(0), 8)))
            index += 1 + len(digits.group(0))
        else:
            out.append(nxt)
            index += 2
    return "".join(out)


def find_calls(text: str, names: Iterable[str]) -> Iterator[Call]:
    """Every call `NAME(...)` of the given names, in source order, with its arguments."""
    wanted = set(names)
    tokens = list(_tokens(text))
    for index, (kind, value, line) in enumerate(tokens):
        if kind != "word" or value not in wanted:
            continue
        following = tokens[index + 1] if index + 1 < len(tokens) else ("", "", 0)
        if following[:2] != ("open", "("):
            continue
        if index > 0 and tokens[index - 1][1] in ("define", "#"):
            continue  # the macro's own definition
        args = _arguments(tokens, index + 2)
        if args is not None:
            yield Call(value, line, tuple(args))


def _tokens(text: str) -> Iterator[tuple[str, str, int]]:
    line = 1
    for found in _TOKEN.finditer(text):
        kind = found.lastgroup or "other"
        value = found.group(0)
        if kind == "newline":
            line += 1
            continue
        if kind == "comment":
            line += value.count("\n")
            continue
        yield kind, value, line
        line += value.count("\n")


def _arguments(tokens: list[tuple[str, str, int]], start: int) -> list[str] | None:
    """The arguments from `start` to the matching ')' (format text per argument)."""
    args: list[list[tuple[str, str]]] = [[]]
    depth = 0
    for kind, value, _ in tokens[start : start + 4000]:
        if kind == "open":
            depth += 1
        elif kind == "close":
            if depth == 0:
                return [_format_of(arg) for arg in args]
            depth -= 1
        elif kind == "comma" and depth == 0:
            args.append([])
            continue
        args[-1].append((kind, value))
    return None


def _format_of(tokens: list[tuple[str, str]]) -> str:
    """Format text of an argument made of string literals (and macros between them)."""
    if not any(kind == "string" for kind, _ in tokens):
        return ""
    parts: list[str] = []
    for kind, value in tokens:
        if kind == "string":
            parts.append(decode_literal(value[value.index('"') + 1 : -1]))
        elif kind == "word" and (macro := _INTTYPES_MACRO.match(value)):
            width = macro.group(2)
            parts.append("l" + macro.group(1) if width in ("64", "MAX", "PTR") else macro.group(1))
        elif kind == "word":
            parts.append("%s")
        elif kind == "other" and value == "#":
            continue  # the stringizing operator before a macro argument
        else:
            return ""  # an expression such as a ternary between literals: not a fixed format
    return "".join(parts)
