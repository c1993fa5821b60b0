"""Open MPI's user-facing failure text, from the source of a pinned release (see source.yaml).

What mpirun and the MPI library print when a job fails is almost all show-help text: the
`help-*.txt` files under ompi/, opal/, orte/ (4.x) and oshmem/, one `[topic]` per message
(catalogs/helpfiles.py), plus the few banners printed with `opal_output(orte_clean_output, ...)`.
From 5.0 on, mpirun is PRRTE's launcher and its messages are in the `prrte` catalog.

Also read: the predefined error handlers' own banner (ompi/errhandler/errhandler_predefined.c,
level ERRHANDLER), each `out(...)` one message: "*** The %s() function was called before
MPI_INIT was invoked.", "*** An error occurred in %s", "*** MPI_ERRORS_ARE_FATAL (processes in
this %s will now abort," (5.0 also has the help-file topics of the same text).

And the block OPAL's fatal-signal handler (opal/util/stacktrace.c) writes on the
crashing process's stderr, each line behind its `HOSTFORMAT` "[host:pid] " prefix: "*** Process
received signal ***", "Signal: %s (%d)", the signal code, the failing address, the stack frames,
"*** End of error message ***". Each `snprintf` format with `HOSTFORMAT` in front is one message
(level SIGNAL), the macro written out as the file defines it; the frame lines are the backtrace
component's "[%2d] " after that prefix (opal/mca/backtrace/execinfo), recorded as one message.
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core.csource import find_calls
from catalogs.core.message import Message
from catalogs.helpfiles import help_messages

ROOTS = ("ompi", "opal", "orte", "oshmem")
# Test programs and the bundled third-party trees (hwloc, libevent, PMIx) print their own text.
SKIP = ("opal/mca/hwloc/hwloc2", "opal/mca/event/libevent", "opal/mca/pmix/pmix", "ompi/contrib")
STACKTRACE = "opal/util/stacktrace.c"
BACKTRACE = "opal/mca/backtrace/execinfo/backtrace_execinfo.c"
ERRHANDLER_FILE = "ompi/errhandler/errhandler_predefined.c"
ERRHANDLER = "ERRHANDLER"
SIGNAL = "SIGNAL"
_HOSTFORMAT = re.compile(r'^#define\s+HOSTFORMAT\s+("(?:[^"\\]|\\.)*")', re.M)
_FRAME = re.compile(r"\[%2d\] ")


def signal_handler_messages(checkout: Path, release: str) -> list[Message]:
    """The lines of the fatal-signal handler's block, each with its "[host:pid] " prefix."""
    path = checkout / STACKTRACE
    if not path.is_file():
        return []
    source = path.read_text(encoding="utf-8", errors="replace")
    defined = _HOSTFORMAT.search(source)
    if defined is None:
        return []
    literal = defined.group(1)
    prefix = literal[1:-1]
    body = source[: defined.start()] + source[defined.end() :].replace("HOSTFORMAT", literal)
    found: list[Message] = []
    for call in find_calls(body, ("snprintf",)):
        text = call.args[2] if len(call.args) > 2 else ""
        if text.startswith(prefix) and text.strip() != prefix.strip():
            text = text.rstrip("\n")
            found.append(Message("openmpi", release, text, "printf", STACKTRACE, call.line, SIGNAL))
    frames = checkout / BACKTRACE
    if frames.is_file():
        for call in find_calls(frames.read_text(encoding="utf-8", errors="replace"), ("snprintf",)):
            frame = next((arg for arg in call.args if _FRAME.search(arg)), "")
            if frame:
                # 4.x passes the prefix in ("%s[%2d] "), 5.0 writes it first ("[%2d] ")
                text = prefix + frame[frame.index("[%2d]") :] + "%s"
                found.append(
                    Message("openmpi", release, text, "printf", BACKTRACE, call.line, SIGNAL)
                )
                break
    return found


def errhandler_messages(checkout: Path, release: str) -> list[Message]:
    """The lines MPI_ERRORS_ARE_FATAL / MPI_ERRORS_ABORT write before aborting: each `out()`
    format with a word of its own ("*** %s\\n" alone is the error string, printed elsewhere)."""
    path = checkout / ERRHANDLER_FILE
    if not path.is_file():
        return []
    found: list[Message] = []
    for call in find_calls(path.read_text(encoding="utf-8", errors="replace"), ("out",)):
        text = call.args[0].rstrip("\n") if call.args else ""
        if re.search(r"[A-Za-z]{3,}", re.sub(r"%[-+ #0-9.]*[a-zA-Z]", "", text)):
            found.append(
                Message("openmpi", release, text, "printf", ERRHANDLER_FILE, call.line, ERRHANDLER)
            )
    return found


def extract(checkout: Path, release: str) -> list[Message]:
    return [
        *help_messages(checkout, release, "openmpi", ROOTS, SKIP),
        *signal_handler_messages(checkout, release),
        *errhandler_messages(checkout, release),
    ]
