"""Reading failure messages out of Go source: `fmt.Errorf("...: %w", err)`, `errors.New("...")`,
`klog.Errorf(...)`, `log.Panicln("...:", err)`, `logger.Warningf(...)`.

Consumes a Go file's text; produces each call of the named functions whose message argument is
made of string literals, with its line, the enclosing function and the text as a printf format.
Interpreted (`"..."`) and raw (`` `...` ``) literals joined by `+` are one text; any other operand
of the `+` is a `%s`. Go's verbs are written as the C conversion that prints the same shape
(`%v`, `%+v`, `%w`, `%T`, `%t` -> `%s`; `%q` -> `"%s"`), as csource writes `PRIu64` as `%lu`.

The print-style functions (`klog.Error(a, b)`, `log.Panicln(a, b)`) print their operands one after
another: the `ln` forms with a space between every two, the others as `fmt.Sprint` does (a space
only between two operands neither of which is a string); a literal operand is its text, any other
a `%s`. Comments are skipped; a call whose message is not a literal (`klog.Error(err)`) yields
nothing, since the text is some other function's.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}
_TOKEN = re.compile(
    r'(?P<string>"(?:[^"\\\n]|\\.)*")'
    r"|(?P<raw>`[^`]*`)"
    r"|(?P<char>'(?:[^'\\\n]|\\.)+')"
    r"|(?P<comment>//[^\n]*|/\*.*?\*/)"
    r"|(?P<open>[(\[{])|(?P<close>[)\]}])|(?P<comma>,)|(?P<plus>\+)"
    r"|(?P<word>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)"
    r"|(?P<newline>\n)|(?P<other>[^\s])",
    re.DOTALL,
)
_VERB = re.compile(
    r"%(?P<flags>[-+# 0]*)(?P<width>\d+|\*)?(?:\.(?P<prec>\d+|\*))?(?P<verb>[a-zA-Z%])"
)
_FUNC = re.compile(r"^func\s+(?:\([^)]*\)\s*)?(?P<name>[A-Za-z_][A-Za-z0-9_]*)", re.M)


@dataclass(frozen=True, slots=True)
class GoCall:
    name: str
    """the callee as written (`klog.Errorf`, `r.logger.Warningf`)"""
    method: str
    """its last part (`Errorf`)"""
    line: int
    function: str
    text: str
    """the message as a printf format"""


def decode(token: str) -> str:
    """A Go string literal's value (interpreted or raw)."""
    if token.startswith("`"):
        return token[1:-1].replace("\r", "")
    body = token[1:-1]
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\" or i + 1 >= len(body):
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt == "x":
            out.append(chr(int(body[i + 2 : i + 4], 16)))
            i += 4
        elif nxt == "u":
            out.append(chr(int(body[i + 2 : i + 6], 16)))
            i += 6
        else:
            out.append(nxt)
            i += 2
    return "".join(out)


def to_printf(go_format: str) -> str:
    """A Go format as the C printf format that prints the same shape."""

    def one(m: re.Match[str]) -> str:
        verb = m["verb"]
        if verb == "%":
            return "%%"
        if verb in "dboc":
            return "%d" if verb != "o" else "%o"
        if verb in "xX":
            return "%" + verb
        if verb in "eEfFgG":
            return "%" + (f".{m['prec']}" if m["prec"] and m["prec"] != "*" else "") + verb
        if verb == "p":
            return "%p"
        if verb == "q":
            return '"%s"'
        return "%s"  # v, w, s, T, t, U and anything else Go prints as text

    return _VERB.sub(one, go_format)


def _escape_percent(text: str) -> str:
    return text.replace("%", "%%")


def _operands(tokens: list[tuple[str, str]]) -> list[str | None]:
    """The comma-separated arguments of a call: each the literal text it is made of (pieces that
    are not literals, joined by `+`, as `\\0`), or None when it holds no literal at all."""
    args: list[list[tuple[str, str]]] = [[]]
    depth = 0
    for kind, value in tokens:
        if kind == "comma" and depth == 0:
            args.append([])
            continue
        if kind == "open":
            depth += 1
        elif kind == "close":
            depth -= 1
        args[-1].append((kind, value))
    out: list[str | None] = []
    for arg in args:
        # split on top-level '+'
        parts: list[list[tuple[str, str]]] = [[]]
        depth = 0
        for kind, value in arg:
            if kind == "plus" and depth == 0:
                parts.append([])
                continue
            if kind == "open":
                depth += 1
            elif kind == "close":
                depth -= 1
            parts[-1].append((kind, value))
        pieces: list[str] = []
        literal = False
        for part in parts:
            if len(part) == 1 and part[0][0] in ("string", "raw"):
                pieces.append(decode(part[0][1]))
                literal = True
            elif part:
                pieces.append("\0")
        out.append("".join(pieces) if literal else None)
    return out


def _format_text(arg: str) -> str:
    return to_printf(arg).replace("\0", "%s")


def _print_text(args: list[str | None], spaced: bool) -> str:
    texts: list[str] = []
    previous_string = True
    for index, arg in enumerate(args):
        is_string = arg is not None
        piece = _escape_percent(arg).replace("\0", "%s") if arg is not None else "%s"
        if index and (spaced or (not is_string and not previous_string)):
            texts.append(" ")
        texts.append(piece)
        previous_string = is_string
    return "".join(texts)


def find_calls(
    source: str, methods: dict[str, str], receivers: re.Pattern[str]
) -> Iterator[GoCall]:
    """Calls `<receiver>.<method>(...)` whose receiver (the callee up to its last dot) matches
    `receivers` and whose method is a key of `methods`: "f" for a format as the first argument,
    "ln" / "print" for the print styles, "err" for a format after a leading error argument."""
    funcs = [(m.start(), m["name"]) for m in _FUNC.finditer(source)]
    tokens: list[tuple[str, str, int, int]] = []
    line = 1
    for m in _TOKEN.finditer(source):
        kind = m.lastgroup or "other"
        value = m.group(0)
        if kind == "comment":
            line += value.count("\n")
            continue
        if kind == "newline":
            line += 1
            continue
        tokens.append((kind, value, line, m.start()))
        line += value.count("\n")
    for index, token in enumerate(tokens):
        kind, value, at_line, offset = token
        if kind != "word" or "." not in value:
            continue
        receiver, _, method = value.rpartition(".")
        if method not in methods or not receivers.fullmatch(receiver):
            continue
        if (
            index + 1 >= len(tokens)
            or tokens[index + 1][0] != "open"
            or tokens[index + 1][1] != "("
        ):
            continue
        depth = 0
        inner: list[tuple[str, str]] = []
        for later in tokens[index + 1 :]:
            if later[0] == "open":
                depth += 1
                if depth == 1:
                    continue
            elif later[0] == "close":
                depth -= 1
                if depth == 0:
                    break
            inner.append((later[0], later[1]))
        args = _operands(inner)
        style = methods[method]
        if style == "f":
            if not args or args[0] is None:
                continue
            text = _format_text(args[0])
        elif style == "err":
            if len(args) < 2 or args[1] is None:
                continue
            text = _format_text(args[1])
        else:
            if not any(a is not None for a in args):
                continue
            text = _print_text(args, spaced=style == "ln")
        function = ""
        for start, name in funcs:
            if start > offset:
                break
            function = name
        yield GoCall(value, method, at_line, function, text)
