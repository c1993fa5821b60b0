"""Pyxis's failure messages: what the SPANK plugin logs through Slurm (`slurm_error`,
`slurm_info`, `slurm_verbose`) and prints to the user's terminal (`slurm_spank_log`).

Reads a pyxis release tree (its `*.c` files at the top level). `level` is the prefix Slurm's
log.c puts before a SPANK plugin's message in the context that file runs in: slurmstepd for the
container set-up (pyxis_slurmstepd.c, enroot.c, importer.c, common.c, config.c), srun for the
options parsed at submission (args.c, pyxis_srun.c), salloc/sbatch for the allocator context
(pyxis_alloc.c) and slurmd for the epilog (pyxis_slurmd.c); `error: ` after it for
slurm_error, none for info and verbose; `spank` for slurm_spank_log, printed without a prefix.
The log file pyxis relays line by line ("pyxis:     %s") is enroot's: catalogs/enroot reads it.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.core.message import Message
from catalogs.csource import find_calls

EMITTER = "pyxis"
PROGRAMS: dict[str, str] = {
    "args.c": "srun",
    "pyxis_srun.c": "srun",
    "pyxis_alloc.c": "salloc",
    "pyxis_slurmd.c": "slurmd",
}
TAGS: dict[str, str] = {"slurm_error": "error: ", "slurm_info": "", "slurm_verbose": ""}
CALLS = (*TAGS, "slurm_spank_log")
# pyxis.spec / the Makefile define the version string a `"pyxis: version v" PYXIS_VERSION` joins.
MACROS = {"PYXIS_VERSION": "%s"}


def extract(checkout: Path, release: str) -> list[Message]:
    out: list[Message] = []
    for path in sorted(checkout.glob("*.c")):
        source = path.read_text(encoding="utf-8", errors="replace")
        program = PROGRAMS.get(path.name, "slurmstepd")
        for call in find_calls(source, CALLS, format_arg=dict.fromkeys(CALLS, 0), macros=MACROS):
            text = call.text.rstrip("\n")
            if not text.strip() or text == "%s":
                continue
            level = "spank" if call.name == "slurm_spank_log" else f"{program}: {TAGS[call.name]}"
            out.append(
                Message(
                    emitter=EMITTER,
                    release=release,
                    text=text,
                    style="printf" if "%" in text else "literal",
                    file=path.name,
                    line=call.line,
                    level=level,
                    function=call.function,
                )
            )
    return sorted(set(out))
