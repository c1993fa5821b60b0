"""TensorPipe's failure messages from its C++ source (github.com/pytorch/tensorpipe), the
transport under torch.distributed.rpc's TensorPipe agent.

TensorPipe reports a failure in two ways:

- It throws, with the macros of `tensorpipe/common/defs.h`. `TP_THROW(ex, ...)` streams
  `In <__func__> at <file>:<line> "` into the exception's text, then the site's own pieces, and
  the thrower appends the closing `"`. The `_IF(cond)` forms stream the condition, stringized,
  right before the pieces with nothing between them (`TP_THROW_ASSERT_IF(iter ==
  globalUuids.end()) << "Couldn't find GPU with UUID " << uuid` prints `"iter ==
  globalUuids.end()Couldn't find GPU with UUID 9b96..."`); `TP_THROW_UV_IF(cond, rv)` adds `: `
  and libuv's error text (`"rv < 0: invalid argument"`); `TP_THROW_SYSTEM*` throw a
  `std::system_error`, whose what() adds `: <strerror>` after the closing quote, and
  `TP_THROW_SYSTEM_IF(cond, err)` streams no condition (`"": Invalid argument`). The argument
  checks (`TP_ARG_CHECK*`, `TP_THROW_IF_NULLPTR`) and the CUDA / CUDA driver / NVML / ibverbs
  check macros are read at each use, as their definitions expand there (`__TP_EXPAND_OPD(a)`
  is the operand stringized and its value in parentheses). The message is the quoted text
  (levels ASSERT, EINVAL, SYSTEM); source.yaml's line_template puts the prefix around it.
  A message whose quoted text is too generic to match alone (a bare condition, `rv < 0: {}`, or
  the empty text of `TP_THROW_SYSTEM_IF`) is recorded whole, prefix included (level WHAT):
  `In {} at {}tensorpipe/transport/uv/{}:{:d} "rv < 0: {}"`. Its function and file name stay
  placeholders and only the directory is literal: file names changed across releases
  (transport/uv/listener.cc became listener_impl.cc and uv.h) and builds before 2021 print the
  compiler's whole path (`/pytorch/third_party/tensorpipe/tensorpipe/...`).
- It returns an `Error` (`TP_CREATE_ERROR(Type, args...)`) whose what() is the error class's
  own what() followed by ` (this error originated at <file>:<line>)` (level Error); the RPC
  agent quotes it (`eof (this error originated at tensorpipe/transport/shm/connection_impl.cc:
  259)`). Each class's what() is read from its definition (a literal, or its stream of literals
  and members); a member set from a constructor parameter takes the site's argument when that
  is a string literal (`TP_CREATE_ERROR(SystemError, "connect", errno)` is `connect: {}`).

`TP_LOG_ERROR()` / `TP_LOG_WARNING()` streams are read as log lines. The debug checks
(`TP_DCHECK*`, compiled out under NDEBUG, as in PyTorch's builds) and the verbose logging
(`TP_VLOG`, off unless TP_VERBOSE_LOGGING is set) are left out, and so are the macros'
definitions themselves, the tests, the benchmarks and the state-machine dump tool.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from catalogs.core import Message, Style
from catalogs.core.pattern import Unsafe, convert
from catalogs.cppsource import _args, _blank_comments
from catalogs.cppstreams import _piece, _split_top, _statement_end
from catalogs.csource import braced

EMITTER = "tensorpipe"
ROOT = "tensorpipe"
SKIP = ("tensorpipe/test/", "tensorpipe/benchmark/", "tensorpipe/misc/")
SUFFIXES = {".cc", ".h"}

# macro -> (level, how its arguments print before the streamed pieces)
THROWS: dict[str, tuple[str, str]] = {
    "TP_THROW_ASSERT": ("ASSERT", "none"),
    "TP_THROW_ASSERT_IF": ("ASSERT", "cond"),
    "TP_THROW_UV": ("ASSERT", "none"),
    "TP_THROW_UV_IF": ("ASSERT", "uv"),
    "TP_THROW_EINVAL": ("EINVAL", "none"),
    "TP_THROW_IF_NULLPTR": ("EINVAL", "nullptr"),
    "TP_ARG_CHECK": ("EINVAL", "arg"),
    "TP_ARG_CHECK_EQ": ("EINVAL", "argcmp"),
    "TP_ARG_CHECK_NE": ("EINVAL", "argcmp"),
    "TP_ARG_CHECK_LT": ("EINVAL", "argcmp"),
    "TP_ARG_CHECK_LE": ("EINVAL", "argcmp"),
    "TP_ARG_CHECK_GT": ("EINVAL", "argcmp"),
    "TP_ARG_CHECK_GE": ("EINVAL", "argcmp"),
    "TP_THROW_SYSTEM": ("SYSTEM", "none"),
    "TP_THROW_SYSTEM_IF": ("SYSTEM", "none"),
    "TP_THROW_SYSTEM_CODE": ("SYSTEM", "none"),
    "TP_THROW_SYSTEM_CODE_IF": ("SYSTEM", "cond"),
    "TP_CHECK_IBV_INT": ("SYSTEM", "none"),
    "TP_CHECK_IBV_PTR": ("SYSTEM", "none"),
    "TP_CUDA_CHECK": ("ASSERT", "cuda"),
    "TP_CUDA_DRIVER_CHECK": ("ASSERT", "cuda_driver"),
    "TP_NVML_CHECK": ("ASSERT", "nvml"),
    "TP_THROW": ("", "typed"),
}
THROWN_TYPES = {
    "std::runtime_error": "ASSERT",
    "std::invalid_argument": "EINVAL",
    "std::system_error": "SYSTEM",
}
LOGS = {"TP_LOG_ERROR": "LOG_ERROR", "TP_LOG_WARNING": "LOG_WARNING"}

Pieces = list[tuple[str, bool]]
"""A message as (text, is_literal) pieces; a piece that is not literal prints a value."""

_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')


def _stringized(expr: str) -> str:
    """What `#expr` prints: the tokens with each run of white space made one space."""
    return " ".join(expr.split())


def _operand(expr: str, value: str = "{}") -> Pieces:
    """`__TP_EXPAND_OPD(a)`: the operand stringized, then its value in parentheses (a CUDA,
    CUDA driver or NVML status prints as its number: `value` `{:d}`)."""
    return [(_stringized(expr) + "(", True), (value, False), (")", True)]


def _brace(pieces: Pieces) -> tuple[str, Style]:
    """The pieces as a format text and its style (literal braces doubled when brace)."""
    if all(literal for _, literal in pieces):
        return "".join(text for text, _ in pieces), "literal"
    text = "".join(
        t.replace("{", "{{").replace("}", "}}") if literal else t for t, literal in pieces
    )
    return text, "brace"


def _specific_alone(pieces: Pieces) -> bool:
    """Whether the generator would match this text alone (catalogs.core.pattern's standard)."""
    text, style = _brace(pieces)
    try:
        convert(text, style)
    except Unsafe:
        return False
    return True


def _define_spans(src: str) -> list[tuple[int, int]]:
    """Where the #define directives lie (with their continued lines)."""
    spans: list[tuple[int, int]] = []
    for found in re.finditer(r"^[ \t]*#[ \t]*define\b(?:[^\n]*\\\n)*[^\n]*", src, re.M):
        spans.append((found.start(), found.end()))
    return spans


def _inside(spans: list[tuple[int, int]], at: int) -> bool:
    return any(a <= at < b for a, b in spans)


def _stream(clean: str, after: int) -> tuple[Pieces, int] | None:
    """The `<< piece << piece` pieces that follow offset `after`, up to the statement's end."""
    head = re.match(r"\s*<<", clean[after:])
    if head is None:
        return None
    begin = after + head.end()
    end = _statement_end(clean, begin)
    return [_piece(p) for p in _split_top(clean[begin:end], "<<")], end


_STATUS: Pieces = [(" ", True), ("{}", False), (" (", True), ("{}", False), (")", True)]
"""A CUDA or CUDA driver status after its number: its name, then its text in parentheses."""


def _head_pieces(kind: str, args: list[str]) -> Pieces | None:
    """What a throw macro prints from its own arguments, before the streamed pieces."""
    if kind == "none":
        return []
    if kind == "cond":
        return [(_stringized(args[0]), True)] if args else None
    if kind == "uv":
        return [(_stringized(args[0]) + ": ", True), ("{}", False)] if args else None
    if kind == "nullptr":
        return [(_stringized(args[0]) + " has nullptr value", True)] if args else None
    if kind == "arg":
        return [("Expected argument to be true: ", True), *_operand(args[0])] if args else None
    if kind == "argcmp":
        # `" " TP_STRINGIFY(_op_)`: the macro stringizes `_op_`, not its operator
        if len(args) < 2:
            return None
        return [
            ("Expected argument ", True),
            *_operand(args[0]),
            (" _op_ ", True),
            *_operand(args[1]),
        ]
    if kind == "cuda":
        if not args:
            return None
        return [("cudaSuccess != error", True), *_operand(args[0], "{:d}"), *_STATUS]
    if kind == "cuda_driver":
        if len(args) < 2:
            return None
        return [*_operand(args[1], "{:d}"), *_STATUS]
    if kind == "nvml":
        if len(args) < 2:
            return None
        return [*_operand(args[1], "{:d}"), (" ", True), ("{}", False)]
    return None


def _join(pieces: Pieces) -> Pieces:
    """Adjacent literal pieces joined."""
    out: Pieces = []
    for text, literal in pieces:
        if out and literal and out[-1][1]:
            out[-1] = (out[-1][0] + text, True)
        elif text or not literal:
            out.append((text, literal))
    return out


def _directory(rel: str) -> str:
    return rel.rsplit("/", 1)[0] + "/"


def _whole(pieces: Pieces, rel: str, level: str) -> Pieces:
    """The whole what() of a throw, prefix included: `In {} at {}<dir>/{}:{:d} "<text>"`, and
    `: {}` after it for a system_error."""
    prefix: Pieces = [
        ("In ", True),
        ("{}", False),
        (" at ", True),
        ("{}", False),
        (_directory(rel), True),
        ("{}", False),
        (":", True),
        ("{:d}", False),
        (' "', True),
    ]
    suffix: Pieces = [('"', True)]
    if level == "SYSTEM":
        suffix += [(": ", True), ("{}", False)]
    return _join([*prefix, *pieces, *suffix])


_FUNCTION_START = re.compile(
    r"\b([A-Za-z_][\w:~]*)\s*\([^;{}]*\)\s*(?:const\s*)?(?:override\s*)?(?:noexcept\s*)?\{"
    # a constructor whose member initializer list comes before its body
    r"|\b([A-Za-z_][\w:~]*)\s*\([^;{}()]*\)\s*:\s*[A-Za-z_][\w:<>, ]*[({]"
)
_NOT_FUNCTIONS = {"if", "for", "while", "switch", "catch", "return"}


def _function(clean: str, at: int) -> str:
    """`__func__` at offset `at` (best effort): the last function body opened before it, by its
    own name without its class; macros (`PYBIND11_MODULE`, `TP_FORALL_CUDA_SYMBOLS`) are not
    functions."""
    for found in reversed(list(_FUNCTION_START.finditer(clean, 0, at))):
        name = (found.group(1) or found.group(2)).rsplit("::", 1)[-1]
        if name in _NOT_FUNCTIONS or re.fullmatch(r"[A-Z0-9_]+", name):
            continue
        return "operator()" if name == "operator" else name
    return ""


def _throws(
    release: str, rel: str, clean: str, defines: list[tuple[int, int]]
) -> Iterator[Message]:
    names = "|".join(sorted(THROWS, key=len, reverse=True))
    for call in re.finditer(rf"(?<![\w#])({names})\s*\(", clean):
        if _inside(defines, call.start()):
            continue
        parsed = _args(clean, call.end() - 1)
        if parsed is None:
            continue
        args, close = parsed
        args = [a for a in args if a]
        level, kind = THROWS[call.group(1)]
        if kind == "typed":
            if not args or args[0].strip() not in THROWN_TYPES:
                continue
            level, kind = THROWN_TYPES[args[0].strip()], "none"
        head = _head_pieces(kind, args)
        if head is None:
            continue
        streamed = _stream(clean, close + 1)
        pieces = _join(head + (streamed[0] if streamed else []))
        if not _specific_alone(pieces):
            pieces, level = _whole(pieces, rel, level), "WHAT"
        text, style = _brace(pieces)
        line = clean.count("\n", 0, call.start()) + 1
        yield Message(
            EMITTER, release, text, style, rel, line, level, _function(clean, call.start())
        )


def _logs(release: str, rel: str, clean: str, defines: list[tuple[int, int]]) -> Iterator[Message]:
    names = "|".join(sorted(LOGS, key=len, reverse=True))
    for call in re.finditer(rf"(?<![\w#])({names})\s*\(\s*\)", clean):
        if _inside(defines, call.start()):
            continue
        streamed = _stream(clean, call.end())
        if streamed is None:
            continue
        pieces = _join(streamed[0])
        if not any(literal and text.strip() for text, literal in pieces):
            continue
        text, style = _brace(pieces)
        line = clean.count("\n", 0, call.start()) + 1
        level = LOGS[call.group(1)]
        yield Message(
            EMITTER, release, text, style, rel, line, level, _function(clean, call.start())
        )


# --- Error classes --------------------------------------------------------------------------


class ErrorClass:
    """One `BaseError` subclass: its what() as pieces (a member is a non-literal piece that
    names it) and which constructor parameter sets each member."""

    def __init__(self, name: str, where: str) -> None:
        self.name = name
        self.where = where
        self.what: list[tuple[str, bool, str]] = []  # (text, literal, member)
        self.members: dict[int, str] = {}  # constructor parameter index -> member

    def pieces(self, args: list[str]) -> Pieces:
        by_member = {m: args[i] for i, m in self.members.items() if i < len(args)}
        out: Pieces = []
        for text, literal, member in self.what:
            arg = by_member.get(member, "")
            strings = list(_STRING.finditer(arg))
            if not literal and strings and _STRING.sub("", arg).strip() == "":
                out.append(("".join(_piece(m.group())[0] for m in strings), True))
            else:
                out.append((text, literal))
        return _join(out)


_HELPERS = {"formatUvError": "transport/uv/uv.h"}


def _what_pieces(
    body: str, helpers: dict[str, list[tuple[str, bool, str]]]
) -> list[tuple[str, bool, str]]:
    """A what() body as pieces: `return "..."`, a `ss << ...` stream, a member, a helper."""
    stream = re.search(r"\b(?:ss|oss)\s*<<(.*?);", body, re.S)
    if stream is not None:
        pieces: list[tuple[str, bool, str]] = []
        for part in _split_top(stream.group(1), "<<"):
            text, literal = _piece(part)
            member = part.strip() if re.fullmatch(r"\w+_", part.strip()) else ""
            pieces.append((text, literal, member))
        return pieces
    returned = re.search(r"\breturn\s+(.*?);", body, re.S)
    if returned is None:
        return []
    expr = returned.group(1).strip()
    text, literal = _piece(expr)
    if literal:
        return [(text, True, "")]
    helper = re.match(r"(\w+)\s*\(", expr)
    if helper is not None and helper.group(1) in helpers:
        return helpers[helper.group(1)]
    member = re.search(r"\b(\w+_)\b", expr)
    return [("{}", False, member.group(1) if member else "")]


def _helpers(tree: Path) -> dict[str, list[tuple[str, bool, str]]]:
    """The what() helpers' streams (uv's `formatUvError`: `uv_err_name: uv_strerror`)."""
    found: dict[str, list[tuple[str, bool, str]]] = {}
    for name, rel in _HELPERS.items():
        path = tree / ROOT / rel
        if not path.is_file():
            continue
        src = _blank_comments(path.read_text(encoding="utf-8", errors="replace"))
        head = re.search(rf"\b{name}\s*\([^)]*\)\s*\{{", src)
        if head is None:
            continue
        stream = re.search(r"\bss\s*<<(.*?);", src[head.end() :], re.S)
        if stream is None:
            continue
        found[name] = [(*_piece(p), "") for p in _split_top(stream.group(1), "<<")]
    return found


def _error_classes(files: list[tuple[str, str]], tree: Path) -> list[ErrorClass]:
    helpers = _helpers(tree)
    classes: list[ErrorClass] = []
    outside: dict[tuple[str, str], str] = {}  # (directory, class) -> out-of-line what() body
    for rel, clean in files:
        for found in re.finditer(r"std::string\s+(\w+)::what\(\)\s*const\s*\{", clean):
            outside[(_directory(rel), found.group(1))] = braced(clean, found.end() - 1)
    for rel, clean in files:
        for found in re.finditer(r"\bclass\s+(\w+)\s+final\s*:\s*public\s+BaseError\s*\{", clean):
            name = found.group(1)
            body = braced(clean, found.end() - 1)
            error = ErrorClass(name, rel)
            inline = re.search(r"std::string\s+what\(\)\s*const\s*override\s*\{", body)
            if inline is not None:
                what = braced(body, inline.end() - 1)
            else:
                what = outside.get((_directory(rel), name), "")
            error.what = _what_pieces(what, helpers)
            ctor = re.search(rf"\b{name}\s*\(([^()]*)\)\s*:\s*([^{{]*)\{{", body)
            if ctor is not None:
                params = [p.split()[-1].lstrip("*&") for p in ctor.group(1).split(",") if p.strip()]
                for init in re.finditer(r"(\w+_)\s*\(\s*(?:std::move\()?\s*(\w+)", ctor.group(2)):
                    if init.group(2) in params:
                        error.members[params.index(init.group(2))] = init.group(1)
            if error.what:
                classes.append(error)
    return classes


def _error_class(classes: list[ErrorClass], name: str, rel: str) -> ErrorClass | None:
    """The class of that name whose definition is nearest the site (namespaces follow the
    directories: transport/ibv's IbvError, channel/cuda_gdr's)."""
    candidates = [c for c in classes if c.name == name]
    if not candidates:
        return None

    def shared(error: ErrorClass) -> int:
        a, b = error.where.split("/"), rel.split("/")
        n = 0
        while n < min(len(a), len(b)) - 1 and a[n] == b[n]:
            n += 1
        return n

    return max(candidates, key=lambda c: (shared(c), c.where))


def _errors(
    release: str, rel: str, clean: str, defines: list[tuple[int, int]], classes: list[ErrorClass]
) -> Iterator[Message]:
    for call in re.finditer(r"(?<![\w#])TP_CREATE_ERROR\s*\(", clean):
        if _inside(defines, call.start()):
            continue
        parsed = _args(clean, call.end() - 1)
        if parsed is None or not parsed[0]:
            continue
        args = parsed[0]
        error = _error_class(classes, args[0].strip(), rel)
        if error is None:
            continue
        origin: Pieces = [
            (f" (this error originated at {rel}:", True),
            ("{:d}", False),
            (")", True),
        ]
        pieces = _join([*error.pieces(args[1:]), *origin])
        text, style = _brace(pieces)
        line = clean.count("\n", 0, call.start()) + 1
        function = _function(clean, call.start())
        yield Message(EMITTER, release, text, style, rel, line, "Error", function)


def extract(checkout: Path, release: str) -> list[Message]:
    files: list[tuple[str, str]] = []
    for path in sorted((checkout / ROOT).rglob("*")):
        if path.suffix not in SUFFIXES or not path.is_file():
            continue
        rel = path.relative_to(checkout).as_posix()
        if rel.startswith(SKIP):
            continue
        files.append((rel, _blank_comments(path.read_text(encoding="utf-8", errors="replace"))))
    classes = _error_classes(files, checkout)
    found: list[Message] = []
    for rel, clean in files:
        defines = _define_spans(clean)
        found += _throws(release, rel, clean, defines)
        found += _logs(release, rel, clean, defines)
        found += _errors(release, rel, clean, defines, classes)
    return found
