"""Finds the format strings of logging calls and string tables in C (and C++) source.

Consumes the text of one C/C++ source file; produces the calls to named logging functions or
macros (`error(...)`, `pr_err(...)`, `FI_WARN(...)`, `NCCL_OFI_WARN(...)`) with the format
string they pass, adjacent string literals joined and escapes decoded, and the string literals of
named tables (`wc_status_str[]`, `return "NODE_FAIL";` in a switch). Comments and `#if 0`
blocks are skipped. Shared by the C emitters' `extract.py` (slurm, kernel, libfabric,
aws-ofi-nccl, rdma-core); it decides nothing about classes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "\\": "\\",
    '"': '"',
    "'": "'",
    "0": "",
    "a": "",
    "e": "",
}

# <inttypes.h> macros that sit between literals: "%" PRIu64 prints like "%lu".
_PRI = re.compile(r"^(?:PRI|SCN)([diouxX])(?:8|16|32|64|MAX|PTR|LEAST\d+|FAST\d+)$")


@dataclass(frozen=True, slots=True)
class Call:
    name: str
    """the function or macro called"""
    text: str
    """the format string, literals joined and escapes decoded"""
    line: int
    """1-based line of the call"""
    function: str
    """the enclosing C function, when it can be told"""
    args: tuple[str, ...]
    """every argument as written (comments removed), for callers that need the level"""


def strip_comments(source: str) -> str:
    """The source with comments blanked (newlines kept, so line numbers hold) and `#if 0`
    blocks blanked."""
    out: list[str] = []
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        if c == "/" and i + 1 < n and source[i + 1] == "*":
            end = source.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", source[i:end]))
            i = end
        elif c == "/" and i + 1 < n and source[i + 1] == "/":
            end = source.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and source[j] != c and source[j] != "\n":
                j += 2 if source[j] == "\\" else 1
            out.append(source[i : j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return _blank_if0("".join(out))


def _blank_if0(source: str) -> str:
    lines = source.split("\n")
    depth = 0
    for index, line in enumerate(lines):
        stripped = line.strip()
        if depth == 0:
            if re.match(r"#\s*if\s+0\b", stripped):
                depth = 1
                lines[index] = ""
            continue
        if re.match(r"#\s*if", stripped):
            depth += 1
        elif re.match(r"#\s*endif", stripped):
            depth -= 1
        elif depth == 1 and re.match(r"#\s*(?:else|elif)", stripped):
            depth = 0
        lines[index] = ""
    return "\n".join(lines)


def _decode(body: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt == "x":
                digits = re.match(r"[0-9a-fA-F]{1,2}", body[i + 2 :])
                i += 2 + (len(digits.group(0)) if digits else 0)
                continue
            if nxt.isdigit():
                digits = re.match(r"[0-7]{1,3}", body[i + 1 :])
                i += 1 + (len(digits.group(0)) if digits else 1)
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


_STRING_TOKEN = re.compile(r'(?:L|u8|u|U)?"((?:[^"\\\n]|\\.)*)"')
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def literal_value(arg: str, macros: dict[str, str] | None = None) -> str | None:
    """The string an argument made only of adjacent literals (and PRI/known string macros)
    stands for; None when the argument is anything else."""
    macros = macros or {}
    arg = arg.strip()
    while arg.startswith("(") and arg.endswith(")") and _balanced(arg[1:-1]):
        arg = arg[1:-1].strip()
    pos = 0
    parts: list[str] = []
    seen_literal = False
    while pos < len(arg):
        if arg[pos].isspace():
            pos += 1
            continue
        found = _STRING_TOKEN.match(arg, pos)
        if found:
            parts.append(_decode(found.group(1)))
            seen_literal = True
            pos = found.end()
            continue
        ident = _IDENT.match(arg, pos)
        if ident:
            name = ident.group(0)
            pri = _PRI.match(name)
            if pri:
                parts.append("l" + pri.group(1))
            elif name in macros:
                parts.append(macros[name])
            else:
                return None
            pos = ident.end()
            continue
        return None
    return "".join(parts) if seen_literal else None


def _balanced(text: str) -> bool:
    depth = 0
    for c in text:
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def outside_literals(text: str, start: int = 0) -> Iterator[tuple[int, int]]:
    """Each index of `text` from `start` that is not inside a string or char literal, with the
    bracket depth before its character; the brackets' own indexes are yielded too."""
    depth, i, n = 0, start, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        yield i, depth
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        i += 1


def split_args(source: str, open_paren: int) -> tuple[list[str], int] | None:
    """The comma-separated arguments of the call whose `(` is at `open_paren`, and the index
    after its `)`; None when the parentheses do not close."""
    args: list[str] = []
    start = open_paren + 1
    for i, depth in outside_literals(source, open_paren):
        c = source[i]
        if c in ")]}" and depth == 1:
            args.append(source[start:i])
            return [a.strip() for a in args], i + 1
        if c == "," and depth == 1:
            args.append(source[start:i])
            start = i + 1
        elif c == ";" and depth <= 1:
            return None
    return None


_FUNC_DEF = re.compile(
    r"^[A-Za-z_][\w \t\*]*?\b([A-Za-z_]\w*)\s*\([^;{}]*\)\s*(?:const\s*)?\{", re.MULTILINE
)


def _function_starts(source: str) -> list[tuple[int, str]]:
    return [(m.start(), m.group(1)) for m in _FUNC_DEF.finditer(source)]


def _enclosing(starts: list[tuple[int, str]], offset: int) -> str:
    name = ""
    for start, found in starts:
        if start > offset:
            break
        name = found
    return name


def find_calls(
    source: str,
    names: Iterable[str],
    *,
    format_arg: dict[str, int] | None = None,
    macros: dict[str, str] | None = None,
) -> Iterator[Call]:
    """Every call to one of `names` whose format argument is a string literal.

    The format argument is `format_arg[name]` when given, else the first argument that is a
    literal (skipping the level and device arguments that come before it)."""
    clean = strip_comments(source)
    wanted = sorted(set(names), key=len, reverse=True)
    if not wanted:
        return
    call = re.compile(r"(?<![\w.>])(" + "|".join(re.escape(n) for n in wanted) + r")\s*\(")
    starts = _function_starts(clean)
    format_arg = format_arg or {}
    for found in call.finditer(clean):
        line_start = clean.rfind("\n", 0, found.start()) + 1
        if clean[line_start : found.start()].lstrip().startswith("#define"):
            continue
        parsed = split_args(clean, found.end() - 1)
        if parsed is None:
            continue
        args, _ = parsed
        name = found.group(1)
        text = _format_of(args, format_arg.get(name), macros)
        if text is None:
            continue
        yield Call(
            name=name,
            text=text,
            line=clean.count("\n", 0, found.start()) + 1,
            function=_enclosing(starts, found.start()),
            args=tuple(args),
        )


def _format_of(args: list[str], index: int | None, macros: dict[str, str] | None) -> str | None:
    if index is not None:
        return literal_value(args[index], macros) if index < len(args) else None
    for arg in args:
        value = literal_value(arg, macros)
        if value is not None:
            return value
    return None


def define_string(source: str, name: str) -> dict[str, str]:
    """`#define NAME(fmt) "prefix" fmt`-style prefixes (pr_fmt, dev_fmt) and plain string
    macros, as {macro name: string}; only `name` is looked for."""
    clean = strip_comments(source)
    found = re.search(
        r"^[ \t]*#[ \t]*define[ \t]+" + re.escape(name) + r"\(\s*fmt\s*\)[ \t]+(.*?)\bfmt\b",
        clean,
        re.MULTILINE,
    )
    if not found:
        return {}
    value = literal_value(found.group(1).replace("KBUILD_MODNAME", '"KBUILD_MODNAME"'))
    return {name: value} if value is not None else {}


def string_macros(source: str) -> dict[str, str]:
    """`#define NAME "literal"` macros of one file."""
    out: dict[str, str] = {}
    for found in re.finditer(
        r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+"
        r'("(?:[^"\\\n]|\\.)*"(?:[ \t]*"(?:[^"\\\n]|\\.)*")*)[ \t]*$',
        strip_comments(source),
        re.MULTILINE,
    ):
        value = literal_value(found.group(2))
        if value is not None:
            out[found.group(1)] = value
    return out


def table_strings(source: str, table: str) -> Iterator[tuple[str, int]]:
    """The string literals of the initializer of array `table` (`... table[] = { ... };`),
    with their lines."""
    clean = strip_comments(source)
    found = re.search(r"\b" + re.escape(table) + r"\s*\[[^\]]*\]\s*=\s*\{", clean)
    if not found:
        return
    end = clean.find("};", found.end())
    body = clean[found.end() : end]
    for literal in _STRING_TOKEN.finditer(body):
        yield _decode(literal.group(1)), clean.count("\n", 0, found.end() + literal.start()) + 1


def braced(text: str, brace: int) -> str:
    """The text between the `{` at `brace` and its matching `}` (to the end when unmatched)."""
    depth = 0
    for index in range(brace, len(text)):
        if text[index] == "{":
            depth += 1
        elif text[index] == "}":
            depth -= 1
            if depth == 0:
                return text[brace + 1 : index]
    return text[brace + 1 :]


def function_returns(source: str, function: str) -> Iterator[tuple[str, int]]:
    """The string literals a function returns (`return "NODE_FAIL";`), with their lines."""
    clean = strip_comments(source)
    for start, name in _function_starts(clean):
        if name != function:
            continue
        body_start = clean.find("{", start) + 1
        body = braced(clean, body_start - 1)
        for found in re.finditer(r'\breturn\s+("(?:[^"\\\n]|\\.)*")\s*;', body):
            value = literal_value(found.group(1))
            if value is not None:
                yield value, clean.count("\n", 0, body_start + found.start()) + 1
        return
