"""DeepEP's failure messages (github.com/deepseek-ai/DeepEP, the expert-parallel all-to-all
library under DeepSeek-V3-style MoE training and inference), from the source of a pinned ref.

DeepEP reports a failure in these ways, each a level of its own:

- PRINTF: its kernels and host code `printf` a line, mostly right before a `trap` (the kernels'
  dispatch / combine / barrier waits that ran out of cycles print which channel, rank and peer
  they waited for: "DeepEP dispatch NVL receiver timeout, channel: %d, ...") and the JIT
  compiler's and runtime's reports. `fprintf(stderr, ...)` counts too; a format with no word of
  its own ("%s\n") is left out.
- HOST_ASSERT: `EP_HOST_ASSERT(cond)` throws an `EPException` whose what() carries the condition
  stringized. Until 2025 that read `Failed: Assertion error <file>:<line> '<cond>'`; the 2026
  rewrite prints `Assertion exception (<file>:<line>): <cond>` (source.yaml's anchor pattern
  takes both). The message is the condition as the preprocessor stringizes it (white space
  runs made one space). `EP_HOST_UNREACHABLE(reason)` throws the same exception with its reason
  (a literal or a `fmt::format` text) in place of the condition.
- DEVICE_ASSERT: `EP_DEVICE_ASSERT(cond)` prints `Assertion failed: <file>:<line>, condition:
  <cond>` from the kernel, then traps. `EP_UNIFIED_ASSERT(cond)` (the 2026 layout helpers,
  compiled for the host and the device) is read as both a HOST_ASSERT and a DEVICE_ASSERT.
- STATIC_ASSERT: `EP_STATIC_ASSERT(cond, reason)` is a `static_assert`; nvcc reports its reason
  when a kernel is compiled (at install time, or when the 2026 JIT compiles a kernel for the
  run's hidden size, rank and top-k counts). The message is the reason; empty reasons are left out.
- EXCEPTION: the CUDA / CUDA driver / NCCL check macros of `exception.cuh` and
  `EPExceptionWithLineInfo(name, ...)` throw an `EPException` named after what failed; the
  message is its whole what() (`Failed: CUDA error {}:{:d} '{}'`, `CUDA runtime exception
  ({}:{:d}): {}`), read from the macro's definition at that ref.
- RuntimeError: `throw std::runtime_error("DeepEP error: ...")` and the other standard exceptions
  with a literal text, which pybind11 raises in Python as `RuntimeError`.
- The Python package (`deep_ep/`) is read with `ast`: raises, and `assert cond, "..."` (its
  Buffer's configuration checks: "Unsupported number of EP ranks: {num_ranks}").

The third-party patches (NVSHMEM), tests and benchmarks are left out. Nothing here decides a
class: mapping.yaml does.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from catalogs.core.csource import decode_literal, find_calls
from catalogs.core.message import Message
from catalogs.cppsource import _args, _blank_comments, _enclosing_function
from catalogs.python_messages import extract_python

EMITTER = "deepep"
CPP_ROOTS = ("csrc", "deep_ep/include")
CPP_SUFFIXES = {".cpp", ".hpp", ".cu", ".cuh", ".h"}
PY_INCLUDE = ("deep_ep/",)
PY_EXCLUDE = ("deep_ep/utils/testing.py", "deep_ep/utils/refs.py", "deep_ep/utils/gate.py")
"""the test helpers and reference implementations the package ships for its own tests"""
ASSERT_PATHS = (
    "deep_ep/__init__.py",
    "deep_ep/buffer.py",
    "deep_ep/buffers/",
    "deep_ep/utils.py",
    "deep_ep/utils/envs.py",
    "deep_ep/utils/find_pkgs.py",
)
"""where an `assert cond, "..."` checks the user's configuration or environment (the Buffer's
arguments, the NCCL library loaded beside PyTorch's, the CUDA and NCCL installs the JIT uses)"""

ASSERTS = {
    "EP_HOST_ASSERT": ("HOST_ASSERT",),
    "EP_DEVICE_ASSERT": ("DEVICE_ASSERT",),
    "EP_UNIFIED_ASSERT": ("HOST_ASSERT", "DEVICE_ASSERT"),
}
THROWN = ("std::runtime_error", "std::logic_error", "std::invalid_argument", "std::out_of_range")
_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
_FORMAT = re.compile(r"^\s*fmt::format\s*\(")


def _stringized(expr: str) -> str:
    """What `#cond` prints: the tokens with each run of white space made one space (a use
    inside a macro's body spans its continued lines)."""
    return " ".join(re.sub(r"\\\n", " ", expr).split())


def _literal(arg: str) -> str | None:
    """The text of an argument made only of string literals (joined), else None."""
    strings = list(_STRING.finditer(arg))
    if not strings or _STRING.sub("", arg).strip():
        return None
    return "".join(decode_literal(m.group(1)) for m in strings)


OWN_MACROS = {
    "EP_HOST_ASSERT",
    "EP_DEVICE_ASSERT",
    "EP_UNIFIED_ASSERT",
    "EP_STATIC_ASSERT",
    "EP_HOST_UNREACHABLE",
    "EPExceptionWithLineInfo",
    "CUDA_CHECK",
    "CUDA_RUNTIME_CHECK",
    "CUDA_DRIVER_CHECK",
    "NCCL_CHECK",
}
"""the reporting macros themselves: a call inside their definitions is the macro's own text
(its parameter, `cond`), read where the macro is used. A call inside any other macro
(`SWITCH_HIDDEN`'s `EP_HOST_ASSERT(false and "Unsupported hidden")`) is a message."""


def _define_lines(src: str) -> set[int]:
    """The lines of the #define directives of OWN_MACROS (with their continued lines)."""
    lines: set[int] = set()
    pattern = r"^[ \t]*#[ \t]*define[ \t]+(\w+)(?:[^\n]*\\\n)*[^\n]*"
    for found in re.finditer(pattern, src, re.M):
        if found.group(1) not in OWN_MACROS:
            continue
        first = src.count("\n", 0, found.start()) + 1
        lines.update(range(first, first + found.group().count("\n") + 1))
    return lines


def _line(src: str, at: int) -> int:
    return src.count("\n", 0, at) + 1


def _printfs(src: str, rel: str, release: str, defines: set[int]) -> list[Message]:
    found: list[Message] = []
    for call in find_calls(src, ("printf", "fprintf")):
        if call.line in defines:
            continue  # EP_DEVICE_ASSERT's own printf: read at each use
        fmt = call.args[1] if call.name == "fprintf" and len(call.args) > 1 else call.args[0]
        fmt = fmt.rstrip("\n") if call.args else ""
        if not re.search(r"[A-Za-z]{3,}", re.sub(r"%[-+ #0-9.]*[a-zA-Z]{1,2}", "", fmt)):
            continue  # no word of its own: "%s\n", "\n"
        style = "printf" if "%" in fmt else "literal"
        found.append(Message(EMITTER, release, fmt, style, rel, call.line, "PRINTF", ""))
    return found


class _Site(NamedTuple):
    """One use of a reporting macro (or a throw) outside the macros' own definitions."""

    name: str
    line: int
    args: list[str]
    text: str
    """what stands between its parentheses, as the source writes it"""
    function: str


def _sites(clean: str, opening: str, defines: set[int]) -> Iterator[_Site]:
    """Each call that `opening` (a regex ending at the call's parenthesis, the macro's or
    class's name its first group) finds in `clean`, with its arguments parsed; uses inside
    OWN_MACROS' definitions and calls whose arguments do not parse are left out."""
    for call in re.finditer(opening, clean):
        line = _line(clean, call.start())
        if line in defines:
            continue
        parsed = _args(clean, call.end() - 1)
        if parsed is None:
            continue
        args, closing = parsed
        function = _enclosing_function(clean, call.start())
        yield _Site(call.group(1), line, args, clean[call.end() : closing], function)


def _asserts(clean: str, rel: str, release: str, defines: set[int]) -> list[Message]:
    found: list[Message] = []
    names = "|".join(sorted(ASSERTS, key=len, reverse=True))
    for site in _sites(clean, rf"(?<![\w#])({names})\s*\(", defines):
        # the condition as the source writes it between the parentheses (comments blanked,
        # string literals kept whole), white space made single spaces as `#cond` does
        text = _stringized(site.text)
        if not text:
            continue
        for level in ASSERTS[site.name]:
            found.append(
                Message(EMITTER, release, text, "literal", rel, site.line, level, site.function)
            )
    return found


def _static_asserts(clean: str, rel: str, release: str, defines: set[int]) -> list[Message]:
    found: list[Message] = []
    for site in _sites(clean, r"(?<![\w#])(EP_STATIC_ASSERT)\s*\(", defines):
        reason = _literal(site.args[-1]) if len(site.args) >= 2 else None
        if reason:
            found.append(
                Message(
                    EMITTER,
                    release,
                    reason,
                    "literal",
                    rel,
                    site.line,
                    "STATIC_ASSERT",
                    site.function,
                )
            )
    return found


def _brace_text(arg: str) -> tuple[str, str] | None:
    """A reason given as a literal or as `fmt::format("...{}...", ...)`: (text, style)."""
    literal = _literal(arg)
    if literal is not None:
        return literal, "literal"
    if _FORMAT.match(arg):
        inner = arg[arg.index("(") + 1 :]
        first = _STRING.match(inner.strip())
        if first is not None:
            return decode_literal(first.group(1)), "brace"
    return None


def _unreachables(clean: str, rel: str, release: str, defines: set[int]) -> list[Message]:
    found: list[Message] = []
    for site in _sites(clean, r"(?<![\w#])(EP_HOST_UNREACHABLE)\s*\(", defines):
        reason = _brace_text(site.args[0]) if site.args else None
        if reason is None:
            continue  # a variable
        text, style = reason
        found.append(
            Message(EMITTER, release, text, style, rel, site.line, "HOST_ASSERT", site.function)  # type: ignore[arg-type]
        )
    return found


def _throws(clean: str, rel: str, release: str, defines: set[int]) -> list[Message]:
    found: list[Message] = []
    names = "|".join(re.escape(n) for n in THROWN)
    for site in _sites(clean, rf"\bthrow\s+({names})\s*\(", defines):
        text = _literal(site.args[0]) if site.args else None
        if text:
            found.append(
                Message(
                    EMITTER, release, text, "literal", rel, site.line, "RuntimeError", site.function
                )
            )
    return found


# --- EPException: the what() of each thrower ------------------------------------------------


def _what_format(clean: str) -> str | None:
    """EPException's what() at this ref as a format of (name, error): the file and line are
    `{}:{:d}`. None when the file does not define the class."""
    if "class EPException" not in clean:
        return None
    if re.search(r'std::string\("Failed: "\)\s*\+\s*name\s*\+\s*" error "', clean):
        return "Failed: {name} error {{}}:{{:d}} '{error}'"
    if re.search(r'ss\s*<<\s*name\s*<<\s*" exception \("', clean):
        return "{name} exception ({{}}:{{:d}}): {error}"
    return None


def _escape(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _exceptions(clean: str, rel: str, release: str, what: str | None) -> list[Message]:
    """`EPException("<name>", __FILE__, __LINE__, <error>)` thrown by the check macros (their
    definitions are read: they are the sites), and `EPExceptionWithLineInfo("<name>", ...)`."""
    if what is None:
        return []
    found: list[Message] = []
    calls = re.finditer(r"(?<![\w#])(EPException|EPExceptionWithLineInfo)\s*\(", clean)
    for call in calls:
        head = clean[max(0, call.start() - 60) : call.start()]
        if call.group(1) == "EPException" and not re.search(r"\bthrow\s*\(?\s*$", head):
            continue  # the class itself, its constructor
        parsed = _args(clean, call.end() - 1)
        if parsed is None or not parsed[0]:
            continue
        args = parsed[0]
        name = _literal(args[0])
        if name is None or name == "Assertion":
            continue  # EP_HOST_ASSERT / EP_HOST_UNREACHABLE: read at each use
        error_arg = args[-1] if len(args) in (2, 4) else ""
        error = _literal(error_arg)
        text = what.format(name=_escape(name), error=_escape(error) if error else "{}")
        line = _line(clean, call.start())
        macro = re.search(r"#\s*define\s+(\w+)[^\n]*(?:\\\n[^\n]*)*$", clean[: call.start()])
        function = macro.group(1) if macro else _enclosing_function(clean, call.start())
        found.append(Message(EMITTER, release, text, "brace", rel, line, "EXCEPTION", function))
    return found


def _cpp_files(checkout: Path) -> list[tuple[Path, str]]:
    files: list[tuple[Path, str]] = []
    for root in CPP_ROOTS:
        for path in sorted((checkout / root).rglob("*")):
            if path.suffix in CPP_SUFFIXES and path.is_file():
                files.append((path, path.relative_to(checkout).as_posix()))
    return files


def extract(checkout: Path, release: str) -> list[Message]:
    files = [
        (rel, path.read_text(encoding="utf-8", errors="replace"))
        for path, rel in _cpp_files(checkout)
    ]
    what = None
    for _rel, src in files:
        what = what or _what_format(_blank_comments(src))
    found: list[Message] = []
    for rel, src in files:
        clean = _blank_comments(src)
        defines = _define_lines(clean)
        found += _printfs(src, rel, release, defines)
        found += _asserts(clean, rel, release, defines)
        found += _static_asserts(clean, rel, release, defines)
        found += _unreachables(clean, rel, release, defines)
        found += _throws(clean, rel, release, defines)
        found += _exceptions(clean, rel, release, what)
    found += extract_python(checkout, release, EMITTER, PY_INCLUDE, PY_EXCLUDE, ASSERT_PATHS)
    return found
