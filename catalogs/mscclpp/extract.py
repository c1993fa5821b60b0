"""MSCCL++'s failure messages (github.com/microsoft/mscclpp: Microsoft's GPU communication library,
its NCCL-API shim `libmscclpp_nccl.so` and its Python bindings), from the source of a pinned
release.

MSCCL++ reports a failure in these ways, each read as a level of its own:

- The debug channel it took from NCCL (src/include/debug.h; src/core/include/debug.h from 0.9):
  `WARN(fmt, ...)` prints `host:pid:tid [dev] <file>:<line> MSCCLPP WARN <text>` with
  MSCCLPP_DEBUG=WARN or INFO (level WARN); `INFO(flags, fmt, ...)` prints `host:pid:tid [dev]
  MSCCLPP INFO <text>` and is kept when its text reports a failure (level INFO, the words of
  catalogs/nccl_debug.py). A `WARN` in another macro's body (MSCCLPP_CUTHROW_IGNORE's "%s:%d
  Cuda failure %d '%s'") is read where it stands.
- The logger of 0.9 and later (src/core/include/logger.hpp): `WARN(SUBSYS, piece, ...)`,
  `ERROR(...)`, `INFO(...)` print `<date> <time> MSCCLPP <pid> <LEVEL> <SUBSYS> <file>:<line> `
  then the pieces streamed one after the other (level "<LEVEL> <SUBSYS>", e.g. "WARN NET"; INFO
  kept as above). The two macros of the same name are told apart by their first argument: a
  subsystem (NET, CONN, ...) for the logger, a format or an MSCCLPP_* flag for the debug channel.
- Exceptions, thrown up to the caller (a C++ program's "terminate called after throwing an
  instance of 'mscclpp::IbError'", the Python binding's `mscclpp._mscclpp.IbError: (errno,
  '...')`, a framework's RuntimeError): `mscclpp::Error(text, ErrorCode::X)` (what() appends
  " (Mscclpp failure: X)", "mscclpp" from 0.9), `SysError` / `IbError(text, errno)` (" (System
  failure: <strerror>)" / " (Ib failure: <strerror>)"), `CudaError` / `CuError` (" (Cuda
  failure: ...)"). The message is the text the call site passes: a literal, a `+`
  concatenation (`{}` for each expression), or a `std::stringstream` built right before the
  throw (`ss << "..." << x; throw Error(ss.str(), ...)`). The logger's `THROW(SUBSYS, Exception,
  code, piece, ...)` (0.9 and later) throws the same exceptions with the logger's header before
  the pieces. The level is the error code for `Error` (InvalidUsage, InternalError, Timeout,
  ...), else the exception's class, prefixed "THROW <SUBSYS> " for THROW. The standard
  exceptions thrown with a text (`std::invalid_argument`, `std::out_of_range`,
  `std::runtime_error`) are read too (their class name is the level).
- `MSCCLPP_CUDATHROW(cmd)` / `MSCCLPP_CUTHROW(cmd)` (include/mscclpp/gpu_utils.hpp) throw
  CudaError / CuError with "Call to <cmd> failed. <__FILE__>:<__LINE__>": one message per call
  site, the command stringized as the preprocessor does (white space runs made one space). Their
  uses inside other macros' definitions (MSCCLPP_CUDATHROW(__e) in the *_IGNORE_TEARDOWN
  wrappers) print "Call to __e failed." and are left out, as are the users' own uses of the
  public macro (not MSCCL++'s text).
- Device assertions, printed by the kernel as "<file>:<line>: <function>: block: [..], thread:
  [..] Assertion `<text>` failed.": `assert(cond)` in device code and
  `MSCCLPP_ASSERT_DEVICE(cond, msg)` (level DEVICE_ASSERT; the text is the condition, or msg);
  and the spin-wait guards `POLL_MAYBE_JAILBREAK(cond, maxSpin)` /
  `OR_POLL_MAYBE_JAILBREAK(c1, c2, maxSpin)` (include/mscclpp/*_device.hpp), which assert the
  stringized wait condition (`#c1 #c2`, joined) once a wait has spun maxSpin times: a peer that
  never signalled, not a bad argument (level POLL_ASSERT).
- The NCCL shim's `ncclGetErrorString` texts (apps/nccl/src/nccl.cu; src/ext/nccl/nccl.cc from
  0.9), printed by PyTorch and other NCCL callers after a failed call (level RESULT), and its
  `printf` lines (CUDACHECK's "Failed: Cuda error %s:%d '%s'", the dlsym failure; level
  PRINTF).
- The Python package (`python/mscclpp/`) is read with `ast`: raises, warnings and logger calls.
  Its `language/` package (the DSL for writing collective algorithms, whose errors are a DSL
  program's own mistakes at plan-generation time) is left out.

Tests, benchmarks, examples and the NPKit profiler are left out. Nothing here decides a class:
mapping.yaml does.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from catalogs.core.csource import find_calls
from catalogs.core.message import Message, Style
from catalogs.cppsource import _args, _blank_comments, _enclosing_function
from catalogs.cppstreams import _message, _piece, _split_top, _statement_end
from catalogs.nccl_debug import FAILURE_WORDS
from catalogs.python_messages import extract_python

EMITTER = "mscclpp"
CPP_ROOTS = ("src", "include/mscclpp", "apps/nccl/src", "python/mscclpp", "python/csrc")
CPP_SUFFIXES = {".cc", ".cpp", ".cu", ".cuh", ".h", ".hpp"}
CPP_SKIP = re.compile(r"(?:^|/)(?:test|tests|npkit|examples|benchmark)(?:/|$)")
PY_INCLUDE = ("python/mscclpp/",)
PY_EXCLUDE = ("python/mscclpp/language/",)

SUBSYSTEMS = ("ENV", "GPU", "NET", "CONN", "EXEC", "NCCL", "ALGO")
_SUBSYSTEM = re.compile(rf"^(?:::)?(?:mscclpp::)?(?:LogSubsys::)?({'|'.join(SUBSYSTEMS)})$")
LOG_MACROS = ("WARN", "INFO", "ERROR", "THROW")
OWN_MACROS = {
    *LOG_MACROS,
    "DEBUG",
    "LOG",
    "TRACE",
    "TRACE_CALL",
    "LOGGER_LOG",
    "MSCCLPP_CUDATHROW",
    "MSCCLPP_CUTHROW",
    "MSCCLPP_ASSERT_DEVICE",
    "POLL_MAYBE_JAILBREAK",
    "OR_POLL_MAYBE_JAILBREAK",
}
"""the reporting macros themselves: a call of one of them inside these macros' own definitions
is the macro's text, read where the macro is used"""
EXCEPTIONS = ("Error", "SysError", "IbError", "CudaError", "CuError")
STD_EXCEPTIONS = ("invalid_argument", "out_of_range", "runtime_error", "logic_error")
CUDA_THROWERS = {"MSCCLPP_CUDATHROW": "CudaError", "MSCCLPP_CUTHROW": "CuError"}
_CODE = re.compile(r"^(?:::)?(?:mscclpp::)?ErrorCode::(\w+)$")
_STREAM_STR = re.compile(r"^(\w+)\s*\.\s*str\s*\(\s*\)$")
_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')


def _line(src: str, at: int) -> int:
    return src.count("\n", 0, at) + 1


def _define_lines(src: str) -> set[int]:
    """The lines of the #define directives of OWN_MACROS (with their continued lines)."""
    lines: set[int] = set()
    for found in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+(\w+)(?:[^\n]*\\\n)*[^\n]*", src, re.M):
        if found.group(1) in OWN_MACROS:
            first = _line(src, found.start())
            lines.update(range(first, first + found.group().count("\n") + 1))
    return lines


def _stringized(expr: str) -> str:
    """What `#arg` prints: the tokens with each run of white space made one space."""
    return " ".join(re.sub(r"\\\n", " ", expr).split())


def _pieces_text(args: list[str]) -> tuple[str, str] | None:
    """The logger's streamed pieces (each a literal or an expression) as one text and style."""
    return _message([_piece(arg) for arg in args if arg.strip()])


def _concat_text(arg: str) -> tuple[str, str] | None:
    """A `+` concatenation (or one literal) as text and style; `std::string(...)` unwrapped."""
    return _message([_piece(piece) for piece in _split_top(arg, "+")])


def _calls(
    clean: str, names: tuple[str, ...], defines: set[int]
) -> Iterator[tuple[str, int, list[str], int]]:
    """(name, offset, raw arguments, closing offset) of each call of `names`, outside the
    definitions of OWN_MACROS."""
    pattern = rf"(?<![\w:#.>])({'|'.join(sorted(names, key=len, reverse=True))})\s*\("
    for call in re.finditer(pattern, clean):
        if _line(clean, call.start()) in defines:
            continue
        parsed = _args(clean, call.end() - 1)
        if parsed is None:
            continue
        yield call.group(1), call.start(), parsed[0], parsed[1]


def _printf_format(clean: str, start: int, close: int, name: str, index: int) -> str:
    """The printf format of argument `index` of the call at clean[start:close + 1]: literals
    joined and decoded, a stringized parameter or macro between them as %s."""
    for call in find_calls(clean[start : close + 1], (name,)):
        return call.args[index] if len(call.args) > index else ""
    return ""


class _Found(list[Message]):
    def __init__(self, rel: str, release: str, clean: str) -> None:
        super().__init__()
        self.rel, self.release, self.clean = rel, release, clean
        # the enclosing function is looked up with the preprocessor's lines blanked: an
        # `#if defined(X)` before a block is not a function
        self._code = re.sub(r"(?m)^[ \t]*#.*$", lambda m: " " * len(m.group()), clean)

    def add(self, text: str, style: str, at: int, level: str) -> None:
        function = _enclosing_function(self._code, at)
        line = _line(self.clean, at)
        kind: Style = style  # type: ignore[assignment]
        self.append(Message(EMITTER, self.release, text, kind, self.rel, line, level, function))


def _logging(found: _Found, defines: set[int]) -> None:
    """The debug channel's WARN / INFO (printf) and the logger's WARN / ERROR / INFO / THROW."""
    clean = found.clean
    # a file's own name for a subsystem (the NCCL shim's `static constexpr auto MSCCLPP_NCCL =
    # mscclpp::LogSubsys::NCCL;`)
    aliases = {
        alias.group(1): alias.group(2)
        for alias in re.finditer(r"\b(\w+)\s*=\s*(?:::)?(?:mscclpp::)?LogSubsys::(\w+)\s*;", clean)
    }
    for name, at, args, close in _calls(clean, LOG_MACROS, defines):
        if not args:
            continue
        first = args[0].strip()
        subsystem = _SUBSYSTEM.match(aliases.get(first, first))
        if subsystem is None:
            # the debug channel: WARN(fmt, ...) / INFO(MSCCLPP_FLAG, fmt, ...)
            if name == "WARN" and first.startswith(('"', "#")):
                fmt = _printf_format(clean, at, close, name, 0).rstrip("\n")
                if fmt:
                    found.add(fmt, "printf" if "%" in fmt else "literal", at, "WARN")
            elif name == "INFO" and first.startswith("MSCCLPP_") and len(args) > 1:
                fmt = _printf_format(clean, at, close, name, 1).rstrip("\n")
                if fmt and FAILURE_WORDS.search(fmt):
                    found.add(fmt, "printf" if "%" in fmt else "literal", at, "INFO")
            continue
        sub = subsystem.group(1)
        if name == "THROW":
            if len(args) < 4:
                continue
            level = _exception_level(args[1], args[2])
            message = _pieces_text(args[3:])
            if message is not None and level is not None:
                found.add(message[0], message[1], at, f"THROW {sub} {level}")
            continue
        message = _pieces_text(args[1:])
        if message is None:
            continue
        if name == "INFO" and not FAILURE_WORDS.search(message[0]):
            continue
        found.add(message[0], message[1], at, f"{name} {sub}")


def _exception_level(exception: str, code: str) -> str | None:
    """The level of an exception thrown with `code`: the ErrorCode's name for mscclpp::Error,
    else the exception's class."""
    kind = exception.strip().split("::")[-1]
    if kind not in EXCEPTIONS:
        return None
    if kind != "Error":
        return kind
    named = _CODE.match(code.strip())
    return named.group(1) if named else None


def _stream_text(clean: str, name: str, before: int) -> tuple[str, str] | None:
    """The text a `std::stringstream NAME;` holds when `NAME.str()` is read at `before`: the
    pieces of every `NAME << ...;` statement from its declaration on, in order."""
    declared = None
    for found in re.finditer(
        rf"std::(?:o?string)?stream\s+{re.escape(name)}\s*[;({{]", clean[:before]
    ):
        declared = found
    if declared is None:
        return None
    pieces: list[tuple[str, bool]] = []
    for sink in re.finditer(rf"(?<![\w.:>]){re.escape(name)}\s*<<", clean[declared.end() : before]):
        begin = declared.end() + sink.end()
        end = _statement_end(clean, begin)
        pieces += [_piece(piece) for piece in _split_top(clean[begin:end], "<<")]
    return _message(pieces)


def _first_text(clean: str, arg: str, at: int) -> tuple[str, str] | None:
    stream = _STREAM_STR.match(arg.strip())
    if stream is not None:
        return _stream_text(clean, stream.group(1), at)
    return _concat_text(arg)


def _exceptions(found: _Found, defines: set[int]) -> None:
    """`[throw] [mscclpp::]Error(text, ErrorCode::X)`, `SysError` / `IbError(text, errno)`, ...,
    and `throw std::invalid_argument(text)` and its kin."""
    clean = found.clean
    names = "|".join(EXCEPTIONS)
    pattern = rf"(?<![\w:~])(?:::)?(?:mscclpp::)?({names})\s*\("
    for call in re.finditer(pattern, clean):
        if _line(clean, call.start()) in defines:
            continue
        parsed = _args(clean, call.end() - 1)
        if parsed is None or len(parsed[0]) != 2:
            continue
        args = parsed[0]
        level = _exception_level(call.group(1), args[1])
        message = _first_text(clean, args[0], call.start())
        if level is not None and message is not None:
            found.add(message[0], message[1], call.start(), level)
    std = "|".join(STD_EXCEPTIONS)
    for call in re.finditer(rf"\bthrow\s+std::({std})\s*\(", clean):
        if _line(clean, call.start()) in defines:
            continue
        parsed = _args(clean, call.end() - 1)
        if parsed is None or len(parsed[0]) != 1:
            continue
        message = _first_text(clean, parsed[0][0], call.start())
        if message is not None:
            found.add(message[0], message[1], call.start(), call.group(1))


def _cuda_throws(found: _Found, defines: set[int]) -> None:
    """Each MSCCLPP_CUDATHROW(cmd) / MSCCLPP_CUTHROW(cmd): "Call to <cmd> failed. {}:{}"."""
    for name, at, args, _close in _calls(found.clean, tuple(CUDA_THROWERS), defines):
        if len(args) != 1 or not args[0].strip():
            continue
        command = _stringized(args[0]).replace("{", "{{").replace("}", "}}")
        found.add(f"Call to {command} failed. {{}}:{{}}", "brace", at, CUDA_THROWERS[name])


def _asserts(found: _Found, defines: set[int]) -> None:
    """Device assertions and the spin-wait guards (the text between "Assertion `" and "`")."""
    clean = found.clean
    for name, at, args, _close in _calls(
        clean,
        ("assert", "MSCCLPP_ASSERT_DEVICE", "POLL_MAYBE_JAILBREAK", "OR_POLL_MAYBE_JAILBREAK"),
        defines,
    ):
        if name == "assert" and len(args) == 1:
            text, level = _stringized(args[0]), "DEVICE_ASSERT"
        elif name == "MSCCLPP_ASSERT_DEVICE" and len(args) == 2:
            literal = _STRING.fullmatch(args[1].strip())
            text = _piece(args[1])[0] if literal else _stringized(args[1])
            level = "DEVICE_ASSERT"
        elif name == "POLL_MAYBE_JAILBREAK" and len(args) == 2:
            text, level = _stringized(args[0]), "POLL_ASSERT"
        elif name == "OR_POLL_MAYBE_JAILBREAK" and len(args) == 3:
            text, level = _stringized(args[0]) + _stringized(args[1]), "POLL_ASSERT"
        else:
            continue
        if text:
            found.add(text, "literal", at, level)


def _error_strings(found: _Found) -> None:
    """The NCCL shim's ncclGetErrorString: each `return "...";` of its body."""
    clean = found.clean
    head = re.search(r"\bncclGetErrorString\s*\([^)]*\)\s*\{", clean)
    if head is None:
        return
    depth, index = 1, head.end()
    while index < len(clean) and depth:
        depth += {"{": 1, "}": -1}.get(clean[index], 0)
        index += 1
    for ret in re.finditer(r'\breturn\s+"((?:[^"\\\n]|\\.)*)"\s*;', clean[head.end() : index]):
        text = _piece(f'"{ret.group(1)}"')[0]
        if text:
            found.add(text, "literal", head.end() + ret.start(), "RESULT")


def _printfs(found: _Found) -> None:
    """printf / fprintf lines of the NCCL shim (CUDACHECK's report, the dlsym failure)."""
    for call in find_calls(found.clean, ("printf", "fprintf")):
        index = 1 if call.name == "fprintf" else 0
        fmt = call.args[index].rstrip("\n") if len(call.args) > index else ""
        if not re.search(r"[A-Za-z]{3,}", re.sub(r"%[-+ #0-9.]*[a-zA-Z]{1,2}", "", fmt)):
            continue
        offset = _offset_of_line(found.clean, call.line)
        found.add(fmt, "printf" if "%" in fmt else "literal", offset, "PRINTF")


def _offset_of_line(src: str, line: int) -> int:
    index = 0
    for _ in range(line - 1):
        index = src.index("\n", index) + 1
    return index


def _cpp_files(checkout: Path) -> list[tuple[str, Path]]:
    files: list[tuple[str, Path]] = []
    for root in CPP_ROOTS:
        base = checkout / root
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            rel = path.relative_to(checkout).as_posix()
            if path.suffix in CPP_SUFFIXES and path.is_file() and not CPP_SKIP.search(rel):
                files.append((rel, path))
    return files


def _is_shim(rel: str) -> bool:
    return rel.startswith(("apps/nccl/", "src/ext/nccl/"))


def extract(checkout: Path, release: str) -> list[Message]:
    messages: list[Message] = []
    for rel, path in _cpp_files(checkout):
        clean = _blank_comments(path.read_text(encoding="utf-8", errors="replace"))
        defines = _define_lines(clean)
        found = _Found(rel, release, clean)
        _logging(found, defines)
        _exceptions(found, defines)
        _cuda_throws(found, defines)
        _asserts(found, defines)
        if _is_shim(rel):
            _error_strings(found)
            _printfs(found)
        messages += found
    messages += extract_python(checkout, release, EMITTER, PY_INCLUDE, PY_EXCLUDE)
    return messages
