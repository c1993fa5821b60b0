"""glibc's fatal heap-consistency and fortify messages, from the source of a pinned release.

When malloc finds its own bookkeeping broken it calls `malloc_printerr(str)` (malloc/malloc.c,
and the MALLOC_CHECK_ hooks in malloc/hooks.c or malloc/malloc-check.c), which prints the text
alone on a line ("%s\\n") and aborts: one message per call's literal. The fortify and
stack-protector checks call `__fortify_fail(msg)` (debug/chk_fail.c "buffer overflow detected",
debug/stack_chk_fail.c "stack smashing detected", the _FORTIFY_SOURCE wrappers of open, mq_open,
longjmp, FD_SET), which prints debug/fortify_fail.c's format around it ("*** %s ***:
terminated") and aborts: one message per distinct text, the format read from that file. 2.34
on, glibc's internal asserts print assert/__libc_assert_fail.c's "Fatal glibc error: ..." line.
Levels: ABORT for all; the process dies of SIGABRT right after.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.core.csource import find_calls
from catalogs.core.message import Message

EMITTER = "glibc"
MALLOC_FILES = ("malloc/malloc.c", "malloc/hooks.c", "malloc/malloc-check.c", "malloc/arena.c")
FORTIFY_FORMAT = "debug/fortify_fail.c"
# The callers of __fortify_fail; the architecture copies of ____longjmp_chk.c print the same text.
FORTIFY_DIRS = ("debug", "io", "rt", "sysdeps/unix/sysv/linux")
ASSERT_FILE = "assert/__libc_assert_fail.c"
LEVEL = "ABORT"


def _read(checkout: Path, relative: str) -> str | None:
    path = checkout / relative
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None


def _format_of(checkout: Path, relative: str) -> tuple[str, int] | None:
    """The printf format the function in `relative` passes to __libc_message, and its line."""
    source = _read(checkout, relative)
    if source is None:
        return None
    for call in find_calls(source, ("__libc_message",)):
        text = next((arg for arg in call.args if "%s" in arg), "")
        if text:
            return text.rstrip("\n"), call.line
    return None


def extract(checkout: Path, release: str) -> list[Message]:
    found: list[Message] = []
    for relative in MALLOC_FILES:
        source = _read(checkout, relative)
        if source is None:
            continue
        for call in find_calls(source, ("malloc_printerr",)):
            text = call.args[0] if call.args else ""
            if text:
                found.append(
                    Message(EMITTER, release, text, "literal", relative, call.line, LEVEL, "")
                )
    fortify = _format_of(checkout, FORTIFY_FORMAT)
    if fortify is not None:
        template, _ = fortify
        for directory in FORTIFY_DIRS:
            for path in sorted((checkout / directory).rglob("*.c")):
                relative = path.relative_to(checkout).as_posix()
                source = path.read_text(encoding="utf-8", errors="replace")
                if "__fortify_fail" not in source:
                    continue
                for call in find_calls(source, ("__fortify_fail", "__fortify_fail_abort")):
                    reason = next((arg for arg in call.args if arg and "%" not in arg), "")
                    if not reason:
                        continue
                    text = template.replace("%s", reason, 1)
                    found.append(
                        Message(EMITTER, release, text, "printf", relative, call.line, LEVEL, "")
                    )
    asserted = _format_of(checkout, ASSERT_FILE)
    if asserted is not None:
        text, line = asserted
        found.append(Message(EMITTER, release, text, "printf", ASSERT_FILE, line, LEVEL, ""))
    return found
