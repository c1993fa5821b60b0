"""bitsandbytes' (github.com/bitsandbytes-foundation/bitsandbytes) failure messages, from the
source of a pinned release (see source.yaml).

The native library (`csrc/`) reports a failed CUDA call through check macros whose `fprintf`
names the call site: `CUDA_CHECK_RETURN(value)` (`BNB_CHECK_RETURN` in the newest releases) and
`CHECK_CUSPARSE(value)` print `Error %s at line %d in file %s\n` with the CUDA error string,
`__LINE__` and `__FILE__`, then `exit(1)` (the ROCm build's `ops.hip` and `ops_hip.cuh`
likewise). `__FILE__` expands where the macro is used, to the
path the build handed the compiler, which ends in the source file's own path (the prebuilt wheels
print `/mmfs1/gscratch/zlab/timdettmers/git/bitsandbytes/csrc/ops.cu` or `/src/csrc/ops.cu`);
each file that uses a check macro therefore gets that message with its own path after the
`__FILE__` placeholder (`... in file %scsrc/ops.cu`), as the preprocessor prints it. The other
`printf`/`fprintf` calls of `csrc/` are read with `catalogs.core.csource` (level PRINTF: bare
lines on stdout or stderr).

The Python package is read with `ast`: raises, logger calls, `warn(...)` (imported bare from
`warnings`, level UserWarning), `print(...)` and `print_dedented(...)` (level PRINT: the
`python -m bitsandbytes` report), the 0.41-0.42 CUDA setup's log entries (`add_log_entry(...)`,
level CUDA_SETUP: printed, or warned when `is_warning`, by `print_log_stack`), and asserts that
state a requirement. From 0.46 a library that failed to load is replaced by a mock whose methods
raise a RuntimeError built by its `_format_*` methods; each line of the texts those methods
return is a message of level REPORT (the lines after `RuntimeError:`). The experimental
`bitsandbytes/research` package is left out. Nothing here decides a class: mapping.yaml does.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from catalogs.core.message import Message, Style
from catalogs.csource import find_calls, split_args, strip_comments
from catalogs.python_messages import in_scope, release_root, scan, to_messages

EMITTER = "bitsandbytes"
C_DIR = "csrc"
C_SUFFIXES = {".cu", ".cuh", ".hip", ".c", ".cpp", ".h"}
PY_INCLUDE = ("bitsandbytes/",)
PY_EXCLUDE = ("bitsandbytes/research/",)
NAMED = {
    "warn": "UserWarning",
    "print": "PRINT",
    "print_dedented": "PRINT",
    "self.add_log_entry": "CUDA_SETUP",
    "cuda_setup.add_log_entry": "CUDA_SETUP",
    "CUDASetup.get_instance().add_log_entry": "CUDA_SETUP",
}
REPORT_FILE = "bitsandbytes/cextension.py"
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)\(([^)]*)\)", re.MULTILINE)
_PRINTF = re.compile(r"%[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|z|j|t)?[diouxXeEfFgGcsp]")


def _c_files(root: Path) -> list[tuple[Path, str]]:
    folder = root / C_DIR
    if not folder.is_dir():
        return []
    return [
        (p, p.relative_to(root).as_posix())
        for p in sorted(folder.rglob("*"))
        if p.suffix in C_SUFFIXES and p.is_file()
    ]


def _define_body(clean: str, start: int) -> tuple[str, int]:
    """The text of the `#define` at `start` with its continuation lines, and where it ends."""
    end = start
    while True:
        nl = clean.find("\n", end)
        if nl < 0:
            return clean[start:], len(clean)
        if clean[end:nl].rstrip().endswith("\\"):
            end = nl + 1
            continue
        return clean[start:nl], nl


def _check_macros(sources: list[tuple[str, str]]) -> tuple[dict[str, tuple[str, str, int]], set]:
    """{macro: (format with `__FILE__`'s conversion marked, file, line)} for every function-like
    macro whose body prints `__FILE__` with printf/fprintf, aliases (`#define A(v) B(v)`)
    included; and the spans (file, start, end) of those definitions."""
    macros: dict[str, tuple[str, str, int]] = {}
    spans: set[tuple[str, int, int]] = set()
    aliases: list[tuple[str, str]] = []
    for rel, clean in sources:
        for m in _DEFINE.finditer(clean):
            body, end = _define_body(clean, m.start())
            body = body.replace("\\\n", " \n")  # line continuations: blanks, lines kept
            printed = next(
                (c for c in find_calls(body[len(m.group(0)) :], ("printf", "fprintf"))), None
            )
            if printed is None or "__FILE__" not in body:
                head = re.match(r"\s*([A-Za-z_]\w*)\s*\(", body[len(m.group(0)) :])
                if head:
                    aliases.append((m.group(1), head.group(1)))
                continue
            args = [a.strip() for a in printed.args]
            fmt_at = next(i for i, a in enumerate(args) if a.startswith('"'))
            values = args[fmt_at + 1 :]
            if "__FILE__" not in values:
                continue
            convs = list(_PRINTF.finditer(printed.text))
            which = values.index("__FILE__")
            if which >= len(convs):
                continue
            conv = convs[which]
            text = printed.text[: conv.end()] + "\x00" + printed.text[conv.end() :]
            line = clean.count("\n", 0, m.start() + body.find("printf")) + 1
            macros[m.group(1)] = (text, rel, line)
            spans.add((rel, m.start(), end))
    for alias, target in aliases:
        if target in macros and alias not in macros:
            macros[alias] = macros[target]
    return macros, spans


def _enclosing(clean: str, offset: int) -> str:
    found = ""
    for m in re.finditer(
        r"^[A-Za-z_][\w \t\*:<>,]*?\b([A-Za-z_]\w*)\s*\([^;{}]*\)\s*(?:const\s*)?\{",
        clean[:offset],
        re.MULTILINE,
    ):
        found = m.group(1)
    return found


def _uses(clean: str, names: list[str]) -> Iterator[tuple[str, int]]:
    if not names:
        return
    call = re.compile(r"(?<![\w.>])(" + "|".join(map(re.escape, names)) + r")\s*\(")
    for m in call.finditer(clean):
        line_start = clean.rfind("\n", 0, m.start()) + 1
        if clean[line_start : m.start()].lstrip().startswith("#"):
            continue
        prev = clean[max(0, line_start - 2) : line_start]
        if prev.rstrip("\n").endswith("\\"):
            continue  # inside another macro's body
        if split_args(clean, m.end() - 1) is None:
            continue
        yield m.group(1), m.start()


def _c_messages(root: Path, release: str) -> list[Message]:
    files = _c_files(root)
    sources = [
        (rel, strip_comments(p.read_text(encoding="utf-8", errors="replace"))) for p, rel in files
    ]
    macros, spans = _check_macros(sources)
    found: list[Message] = []
    for rel, clean in sources:
        inside = [(s, e) for f, s, e in spans if f == rel]
        for call in find_calls(clean, ("printf", "fprintf")):
            offset = _offset_of_line(clean, call.line)
            if any(s <= offset <= e for s, e in inside):
                continue  # a check macro's own fprintf: read at each file that uses it
            found.append(
                Message(
                    EMITTER, release, call.text, "printf", rel, call.line, "PRINTF", call.function
                )
            )
        first: dict[str, int] = {}
        for name, at in _uses(clean, sorted(macros)):
            first.setdefault(macros[name][0].replace("\x00", rel), at)
        for text, at in sorted(first.items()):
            line = clean.count("\n", 0, at) + 1
            found.append(
                Message(
                    EMITTER, release, text, "printf", rel, line, "PRINTF", _enclosing(clean, at)
                )
            )
    return found


def _offset_of_line(text: str, line: int) -> int:
    offset = 0
    for _ in range(line - 1):
        offset = text.find("\n", offset) + 1
    return offset


def _fstring_text(node: ast.AST) -> tuple[str, bool] | None:
    """A string constant or f-string as the catalog writes it (placeholders `{expr}`, literal
    braces doubled in an f-string), and whether it has placeholders."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value, False
    if not isinstance(node, ast.JoinedStr):
        return None
    parts: list[str] = []
    for value in node.values:
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            parts.append(value.value.replace("{", "{{").replace("}", "}}"))
        elif isinstance(value, ast.FormattedValue):
            parts.append("{" + ast.unparse(value.value) + "}")
    return "".join(parts), True


def _report_messages(root: Path, release: str) -> list[Message]:
    """Each line of the texts the `_format_*` methods of cextension.py build for the mock
    library's RuntimeError (0.46 and later)."""
    path = root / REPORT_FILE
    if not path.is_file():
        return []
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except SyntaxError:
        return []
    found: list[Message] = []
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef) or not func.name.startswith("_format_"):
            continue
        docstring = ast.get_docstring(func, clean=False)
        skip: set[int] = set()
        for node in ast.walk(func):
            if isinstance(node, ast.JoinedStr):
                skip.update(id(v) for v in node.values)  # pieces of an f-string read whole
            elif isinstance(node, ast.Compare):
                skip.update(id(v) for v in (node.left, *node.comparators))  # "x" in error
            elif isinstance(node, ast.Attribute):
                skip.add(id(node.value))  # "\n  - ".join(...)
            elif isinstance(node, ast.Call):
                skip.update(id(a) for a in node.args)  # split(":"), helpers' arguments
        for node in ast.walk(func):
            if id(node) in skip:
                continue
            got = _fstring_text(node)
            if got is None or got[0] == docstring:
                continue
            text, formatted = got
            for piece in text.split("\n"):
                piece = piece.strip()
                if len(re.findall(r"[A-Za-z]{3,}", re.sub(r"\{[^{}]*\}", " ", piece))) < 3:
                    continue  # a separator, a bare command or URL, a fallback value
                style: Style = "fstring" if formatted else "literal"
                found.append(
                    Message(
                        EMITTER,
                        release,
                        piece,
                        style,
                        REPORT_FILE,
                        node.lineno,
                        "REPORT",
                        func.name,
                    )
                )
    return found


def extract(checkout: Path, release: str) -> list[Message]:
    root = release_root(checkout, release)
    found = _c_messages(root, release)
    python = [f for f in scan(root, PY_INCLUDE, PY_EXCLUDE, NAMED) if in_scope(f, ())]
    found += to_messages(python, EMITTER, release)
    found += _report_messages(root, release)
    return found
