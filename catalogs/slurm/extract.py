"""Slurm's failure messages: what slurmstepd, slurmd and srun log, the error-code strings they
append, and the job states and state reasons scontrol prints.

Reads a Slurm release tree (`src/`). `level` is the prefix Slurm's log.c prints before the
message as the job's output or slurmd's log shows it: the program (slurmstepd, slurmd, srun)
and the level tag (`error: `, `fatal: `, `warning: `; none at info or verbose). Slurm's own
format extensions (`%pJ` -> `JobId=...`, `%ps` -> `StepId=...`, `%pS`, `%pA`, `%pd`, `%pD`,
`%m`) are written as the `%s` they print like, since log.c expands them before printf sees them.
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core.message import Message
from catalogs.csource import find_calls, function_returns, literal_value, strip_comments

EMITTER = "slurm"

# (folder or file under src/, the program whose output carries its messages)
SOURCES: tuple[tuple[str, str], ...] = (
    ("slurmd/slurmstepd", "slurmstepd"),
    ("slurmd/common", "slurmstepd"),
    ("slurmd/slurmd", "slurmd"),
    ("plugins/task/cgroup", "slurmstepd"),
    ("plugins/task/affinity", "slurmstepd"),
    ("plugins/cgroup", "slurmstepd"),
    ("plugins/jobacct_gather", "slurmstepd"),
    ("plugins/proctrack", "slurmstepd"),
    ("plugins/gres", "slurmstepd"),
    ("plugins/gpu", "slurmstepd"),
    ("plugins/mpi", "slurmstepd"),
    ("plugins/prep", "slurmd"),
    ("interfaces/cgroup.c", "slurmstepd"),
    ("interfaces/gres.c", "slurmstepd"),
    ("interfaces/task.c", "slurmstepd"),
    ("interfaces/proctrack.c", "slurmstepd"),
    ("interfaces/jobacct_gather.c", "slurmstepd"),
    ("interfaces/mpi.c", "slurmstepd"),
    ("srun", "srun"),
    ("api/step_launch.c", "srun"),
    ("api/step_io.c", "srun"),
    ("api/allocate.c", "srun"),
    ("api/allocate_msg.c", "srun"),
)

# log.c prefixes by call (info and verbose print no tag)
TAGS: dict[str, str] = {
    "fatal": "fatal: ",
    "fatal_abort": "fatal: ",
    "error": "error: ",
    "warning": "warning: ",
    "info": "",
    "verbose": "",
    "slurm_info": "",
    "slurm_verbose": "",
}
SCONTROL_INDENT = "   "
# log.c also expands %m (strerror(errno)) itself.
_SLURM_PERCENT_P = re.compile(r"%p[AdDJsS]|%m")


def _sources(src: Path) -> list[tuple[Path, str]]:
    found: list[tuple[Path, str]] = []
    for relative, program in SOURCES:
        path = src / relative
        if path.is_file():
            found.append((path, program))
        elif path.is_dir():
            found.extend((file, program) for file in sorted(path.rglob("*.c")))
    return found


def _log_messages(root: Path, release: str) -> list[Message]:
    src = root / "src"
    out: list[Message] = []
    for path, program in _sources(src):
        source = path.read_text(encoding="utf-8", errors="replace")
        for call in find_calls(source, TAGS, format_arg=dict.fromkeys(TAGS, 0)):
            text = _SLURM_PERCENT_P.sub("%s", call.text).strip()
            if not text:
                continue
            out.append(
                Message(
                    emitter=EMITTER,
                    release=release,
                    text=text,
                    style="printf" if "%" in text else "literal",
                    file=str(path.relative_to(root)),
                    line=call.line,
                    level=f"{program}: {TAGS[call.name]}",
                    function=call.function,
                )
            )
    return out


_ERRTAB = re.compile(
    r"\{\s*(?:ERRTAB_ENTRY\(\s*)?(?P<code>[A-Z][A-Z0-9_]*)\s*\)?\s*,\s*"
    r'(?P<text>(?:"(?:[^"\\\n]|\\.)*"\s*)+)\}'
)


def _errno_strings(root: Path, release: str) -> list[Message]:
    """slurm_strerror()'s table: the text srun, sbatch and the daemons append after a colon."""
    path = root / "src/common/slurm_errno.c"
    clean = strip_comments(path.read_text(encoding="utf-8", errors="replace"))
    out: list[Message] = []
    for found in _ERRTAB.finditer(clean):
        text = literal_value(found.group("text"))
        if not text:
            continue
        out.append(
            Message(
                emitter=EMITTER,
                release=release,
                text=text,
                style="printf" if "%" in text else "literal",
                file=str(path.relative_to(root)),
                line=clean.count("\n", 0, found.start()) + 1,
                level="srun: error: ",
                function=found.group("code"),
            )
        )
    return out


def _states(root: Path, release: str) -> list[Message]:
    """Job states and state reasons as `scontrol show job` prints them:
    `JobState=%s Reason=%s Dependency=%s` (src/scontrol/info_job.c) with each table entry."""
    out: list[Message] = []
    defs = root / "src/common/slurm_protocol_defs.c"
    for state, line in function_returns(defs.read_text(encoding="utf-8"), "job_state_string"):
        if state == "?":
            continue
        out.append(
            Message(
                emitter=EMITTER,
                release=release,
                text=f"JobState={state} Reason=%s Dependency=%s",
                style="printf",
                file=str(defs.relative_to(root)),
                line=line,
                level=SCONTROL_INDENT,
                function="job_state_string",
            )
        )
    reasons = root / "src/common/job_state_reason.c"
    if reasons.is_file():  # 24.05 and later: a table of entries with .str
        clean = strip_comments(reasons.read_text(encoding="utf-8"))
        entries = [
            (found.group(1), clean.count("\n", 0, found.start()) + 1, found.group(2))
            for found in re.finditer(
                r'\[(\w+)\]\s*=\s*\{[^}]*?\.str\s*=\s*("(?:[^"\\\n]|\\.)*")', clean
            )
        ]
        rows = [(literal_value(text) or "", line, code) for code, line, text in entries]
        file, function = reasons, "job_state_reason_string"
    else:  # up to 23.11: a switch in job_reason_string()
        rows = [
            (text, line, "job_reason_string")
            for text, line in function_returns(
                defs.read_text(encoding="utf-8"), "job_reason_string"
            )
        ]
        file, function = defs, "job_reason_string"
    for text, line, code in rows:
        if not text or text == "?":
            continue
        out.append(
            Message(
                emitter=EMITTER,
                release=release,
                text=f"JobState=%s Reason={text} Dependency=%s",
                style="printf",
                file=str(file.relative_to(root)),
                line=line,
                level=SCONTROL_INDENT,
                function=code if code != "job_reason_string" else function,
            )
        )
    return out


def extract(checkout: Path, release: str) -> list[Message]:
    found = _log_messages(checkout, release) + _errno_strings(checkout, release)
    found += _states(checkout, release)
    return sorted(set(found))
