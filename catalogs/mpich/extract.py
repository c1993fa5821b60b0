"""MPICH's failure text, from the source of a pinned release (see source.yaml).

Two emitters share the package, and one small third:

- Hydra, the launcher (`mpiexec`, `mpiexec.hydra`) and its per-node proxy (src/pm/hydra). Its
  error macros (lib/hydra.h, include/hydra.h before 4.1) print through `HYDU_error_printf`:
  the process's `[mpiexec@host] ` or `[proxy:PGID:ID@host] ` prefix, then `"%s (%s:%d): "`
  with `__func__`, `__FILE__` and `__LINE__`, then the message. Read here: `HYDU_ERR_POP(status,
  fmt, ...)`, `HYDU_ERR_SETANDJUMP(status, error, fmt, ...)`, `HYDU_ERR_CHKANDJUMP(status, chk,
  error, fmt, ...)`, `HYDU_error_printf(fmt, ...)` (level ERROR in mpiexec's files, PROXY in the
  proxy's), `HYDU_ASSERT(x, status)`, which prints `assert (<x as written>) failed` through the
  same macros, `HYDU_dump(fp, fmt, ...)` (the prefix only: level DUMP) and
  `HYDU_dump_noprefix(fp, fmt, ...)` with mpiexec's `printf` of a signalled application and the
  `fprintf(stderr, ...)` errors (no prefix: level BANNER; the "BAD TERMINATION" box).
  `HYDU_warn_printf` is compiled out unless Hydra is configured with --enable-warnings, and the
  usage text printed for -help is left out.
- The MPI library's error strings: every `errnames.txt` under src/ (`**name:text` generic and
  `**name %d:text %d` specific forms), which MPICH prints as the lines of its error stack,
  `FUNCTION(LINE)....: text` (level STACK). Their conversions are MPICH's own
  (src/mpi/errhan/errutil.c, vsnprintf_mpi): `%C` a communicator, `%D` a datatype, `%i` a rank
  that may be MPI_ANY_SOURCE, and so on; each is written here as the printf conversion that
  prints the same characters (`%s` for a name, `%lld` for `%L`). From 4.2 the `OFI call %s
  failed` texts of the libfabric calls are generated at build time by maint/extracterrmsgs,
  read from there. The framing of a fatal error (level ABORT): `Fatal error in %s: %s, error
  stack:` (errutil.c's "Fatal error in %s: " followed by the error class and ", error stack:"),
  ch4's `Abort(%d) on node %d (rank %d in comm %d): %s`, MPI_Abort's `application called
  MPI_Abort(%s, %d) - process %d` and ch3's `internal ABORT - process %d: %s`, each as the
  pieces the source joins, where the source holds them.
- The simple PMI client's lines printed whatever its debug setting (`PMIU_printf(1, ...)`,
  behind `[cli_RANK]: ` or `[unset]: `; level PMI): a launcher that does not speak MPICH's PMI
  makes `MPI_Init` fail there.
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core.message import Message
from catalogs.csource import find_calls, split_args, strip_comments

EMITTER = "mpich"
HYDRA = "src/pm/hydra"
# Hydra's own examples, maintainer tools and the test programs print nothing users meet.
HYDRA_SKIP = ("examples/", "maint/", "mansrc/")
# macro -> index of its format argument
ERROR_MACROS = {
    "HYDU_ERR_POP": 1,
    "HYDU_ERR_SETANDJUMP": 2,
    "HYDU_ERR_CHKANDJUMP": 3,
    "HYDU_error_printf": 0,
}
DUMP_MACROS = {"HYDU_dump": 1}
BANNER_MACROS = {"HYDU_dump_noprefix": 1}
# The proxy's sources (4.1 on: proxy/; before: pm/pmiserv/pmip*): its lines carry the
# "[proxy:PGID:ID@host] " prefix instead of mpiexec's.
_PROXY_FILE = re.compile(r"^src/pm/hydra/(?:proxy/|pm/pmiserv/pmip)")
# Usage text for -help and the version banner of -info.
_USAGE_FILE = re.compile(
    r"(?:ui/mpich/utils\.c|mpiexec/options\.c|_nameserver\.c|persist_server\.c)$"
)

# MPICH's vsnprintf_mpi conversions -> the printf conversion printing the same characters.
_MPI_CONVERSIONS = {
    "d": "%d",
    "x": "%x",
    "X": "%llx",
    "L": "%lld",
    "c": "%lld",
    "p": "%s",  # a pointer, or MPI_IN_PLACE
    "i": "%s",  # a rank, or MPI_ANY_SOURCE / MPI_PROC_NULL / MPI_ROOT
    "t": "%s",  # a tag, or MPI_ANY_TAG
    "s": "%s",
}
_ERRNAME = re.compile(r"^\s*(\*\*[^:]*):(.*)$")

# (file, the literal the source prints, the line it prints, as that file's code joins it)
FRAMES = (
    ("src/mpi/errhan/errutil.c", "Fatal error in %s: ", "Fatal error in %s: %s, error stack:"),
    (
        "src/mpid/ch4/src/ch4_globals.c",
        "Abort(%d)%s%s: %s%s\\n",
        "Abort(%d) on node %d (rank %d in comm %d): %s",
    ),
    ("src/mpid/ch3/src/mpid_abort.c", "internal ABORT - process %d: %s", None),
    ("src/mpid/ch3/src/mpid_abort.c", "internal ABORT - process %d", None),
    ("src/mpi/init/init_impl.c", "application called MPI_Abort(%s, %d) - process %d", None),
    ("src/mpi/init/abort.c", "application called MPI_Abort(%s, %d) - process %d", None),
)
PMI_DIRS = ("src/pmi/simple", "src/pmi/src")


def _message(
    release: str, text: str, file: str, line: int, level: str, function: str = ""
) -> Message:
    style = "printf" if "%" in text else "literal"
    return Message(EMITTER, release, text, style, file, line, level, function)


def _c_files(checkout: Path, folder: str) -> list[tuple[str, str]]:
    """(path relative to the checkout, source with line continuations blanked) of each C file."""
    base = checkout / folder
    if not base.is_dir():
        return []
    found = []
    for path in sorted(base.rglob("*")):
        if path.suffix not in (".c", ".h") or not path.is_file():
            continue
        relative = path.relative_to(checkout).as_posix()
        # A macro body's backslash-newline (HYDU_MALLOC_OR_JUMP's message) is a space to C.
        source = re.sub(r"\\\n", " \n", path.read_text(encoding="utf-8", errors="replace"))
        found.append((relative, source))
    return found


def _stringized(expression: str) -> str:
    """`#x` of a macro argument: its tokens with each run of white space made one space."""
    return re.sub(r"\s+", " ", expression).strip()


def hydra_messages(checkout: Path, release: str) -> list[Message]:
    out: list[Message] = []
    for relative, source in _c_files(checkout, HYDRA):
        inner = relative[len(HYDRA) + 1 :]
        if inner.startswith(HYDRA_SKIP):
            continue
        error_level = "PROXY" if _PROXY_FILE.match(relative) else "ERROR"
        groups = (
            (ERROR_MACROS, error_level),
            (DUMP_MACROS, "DUMP"),
            (BANNER_MACROS, "BANNER"),
        )
        header = relative.endswith("/hydra.h")
        for macros, level in groups:
            if header and level != error_level:
                continue  # the error macros' own prefix ("%s (%s:%d): ")
            for call in find_calls(source, macros, format_arg=macros):
                text = call.text.strip("\n")
                if text.strip():
                    function = call.function or (_defined_at(source, call.line) if header else "")
                    out.append(_message(release, text, relative, call.line, level, function))
        out.extend(_asserts(source, relative, release, error_level))
        if relative.endswith("/mpiexec.c"):
            for call in find_calls(source, ("printf",), format_arg={"printf": 0}):
                text = call.text.strip("\n")
                if text.strip():
                    out.append(
                        _message(release, text, relative, call.line, "BANNER", call.function)
                    )
        if not _USAGE_FILE.search(relative):
            for call in find_calls(source, ("fprintf",), format_arg={"fprintf": 1}):
                if call.args and call.args[0].strip() == "stderr":
                    text = call.text.strip("\n")
                    if text.strip():
                        out.append(
                            _message(release, text, relative, call.line, "BANNER", call.function)
                        )
    return out


def _defined_at(source: str, line: int) -> str:
    """The macro whose body holds `line` (hydra.h's HYDU_MALLOC_OR_JUMP): __func__ is then the
    function that expands it, which the rendered example names after the macro."""
    name = ""
    for found in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+(\w+)", source, re.MULTILINE):
        if source.count("\n", 0, found.start()) + 1 > line:
            break
        name = found.group(1)
    return name


def _asserts(source: str, relative: str, release: str, level: str) -> list[Message]:
    """`HYDU_ASSERT(x, status)` prints "assert (x) failed" with x as the source writes it."""
    clean = strip_comments(source)
    out: list[Message] = []
    for found in re.finditer(r"(?<![\w.>])HYDU_ASSERT\s*\(", clean):
        line_start = clean.rfind("\n", 0, found.start()) + 1
        if clean[line_start : found.start()].lstrip().startswith("#define"):
            continue
        parsed = split_args(clean, found.end() - 1)
        if parsed is None or len(parsed[0]) != 2:
            continue
        expression = _stringized(parsed[0][0])
        if expression in ("x", ""):
            continue  # the macro's own body
        line = clean.count("\n", 0, found.start()) + 1
        text = f"assert ({expression}) failed"
        # A literal '%' in the expression (a modulo) is printed as is: the text is no format.
        out.append(
            Message(
                EMITTER,
                release,
                text,
                "literal",
                relative,
                line,
                level,
                _function_at(clean, found.start()),
            )
        )
    return out


_FUNC_DEF = re.compile(r"^[A-Za-z_][\w \t\*]*?\b([A-Za-z_]\w*)\s*\([^;{}]*\)\s*\{", re.MULTILINE)


def _function_at(clean: str, offset: int) -> str:
    name = ""
    for found in _FUNC_DEF.finditer(clean):
        if found.start() > offset:
            break
        name = found.group(1)
    return name


def _printf_text(text: str) -> str:
    """An errnames text with MPICH's own conversions written as printf's."""

    def convert(found: re.Match[str]) -> str:
        return _MPI_CONVERSIONS.get(found.group(1), "%s")

    return re.sub(r"%([A-Za-z])", convert, text)


def errnames_messages(checkout: Path, release: str) -> list[Message]:
    out: list[Message] = []
    src = checkout / "src"
    if not src.is_dir():
        return out
    for path in sorted(src.rglob("errnames.txt")):
        relative = path.relative_to(checkout).as_posix()
        if "/test/" in f"/{relative}":
            continue
        lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
        index = 0
        while index < len(lines):
            start = index
            raw = lines[index]
            index += 1
            if re.match(r"^\s*#", raw):
                continue
            found = _ERRNAME.match(raw)
            if found is None:
                continue
            name, text = found.group(1), found.group(2).rstrip("\r")
            while re.search(r"\\\s*$", text) and index < len(lines):
                text = re.sub(r"\\\s*$", "", text) + lines[index].lstrip().rstrip("\r")
                index += 1
            # The text becomes a C string literal of the generated errmsg.h.
            text = text.replace('\\"', '"').strip()
            if not text:
                continue
            out.append(_message(release, _printf_text(text), relative, start + 1, "STACK", name))
    out.extend(_generated_ofi_names(checkout, release))
    return out


def _generated_ofi_names(checkout: Path, release: str) -> list[Message]:
    """The texts maint/extracterrmsgs makes for each MPIDI_OFI_CALL (4.2 on)."""
    script = checkout / "maint/extracterrmsgs"
    if not script.is_file():
        return []
    out: list[Message] = []
    for number, line in enumerate(script.read_text(encoding="utf-8", errors="replace").split("\n")):
        found = re.search(r'\$longnames\{"\*\*ofid_\$name[^"]*"\}\s*=\s*"([^"]*)"', line)
        if found:
            text = found.group(1).replace("$name", "%s")
            out.append(_message(release, text, "maint/extracterrmsgs", number + 1, "STACK", "ofid"))
    return out


def _c_literal(text: str) -> str:
    return '"' + text.replace('"', '\\"') + '"'


def frame_messages(checkout: Path, release: str) -> list[Message]:
    out: list[Message] = []
    for file, literal, printed in FRAMES:
        path = checkout / file
        if not path.is_file():
            continue
        lines = strip_comments(path.read_text(encoding="utf-8", errors="replace")).split("\n")
        needle = _c_literal(literal)
        for number, line in enumerate(lines):
            if needle in line:
                text = printed or literal
                if "error stack" in text and '", error stack:' not in "\n".join(lines):
                    break
                out.append(_message(release, text, file, number + 1, "ABORT"))
                break
    return out


def pmi_messages(checkout: Path, release: str) -> list[Message]:
    """The simple PMI client's `PMIU_printf(1, ...)`: printed whatever PMI_DEBUG says."""
    out: list[Message] = []
    for folder in PMI_DIRS:
        for relative, source in _c_files(checkout, folder):
            for call in find_calls(source, ("PMIU_printf",), format_arg={"PMIU_printf": 1}):
                if not call.args or call.args[0].strip() != "1":
                    continue
                text = call.text.strip("\n")
                if text.strip():
                    out.append(_message(release, text, relative, call.line, "PMI", call.function))
    return out


def extract(checkout: Path, release: str) -> list[Message]:
    return [
        *hydra_messages(checkout, release),
        *errnames_messages(checkout, release),
        *frame_messages(checkout, release),
        *pmi_messages(checkout, release),
    ]
