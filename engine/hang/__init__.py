"""Hang triage from PyTorch Flight Recorder dumps: which ranks the others wait for, and why.

Consumes every rank's dump (pickle or JSON, read without the standard unpickler) and the
signature matches found among the other inputs; produces a `HangReport`: ranked candidates
(stalled, never_entered, stopped_reporting, mismatched) per process group and sequence id,
supported or weakened by hardware and host records on the implicated hosts, and an isolation
plan for Slurm or Kubernetes that is printed for review and never executed.

    dumps.py         one dump file -> FrDump       plain_pickle.py  the restricted unpickler
    progress.py      dumps -> per-group progress   culprits.py      progress -> candidates
    mismatch.py      differing calls at one seq    evidence.py      evidence lines and wording
    hosts.py         rank -> host, as stated       correlate.py     records -> support
    isolation.py     candidates -> plan or reason  triage.py        all of it: triage_dumps
    models.py        the report (JSON contract)    render.py        text and JSON
    command.py       `denpex hang PATH...`
"""

from denpex.hang.dumps import DumpError
from denpex.hang.hosts import Location
from denpex.hang.models import HangReport, Scheduler
from denpex.hang.triage import DumpFile, HangOptions, triage_dumps

__all__ = [
    "DumpError",
    "DumpFile",
    "HangOptions",
    "HangReport",
    "Location",
    "Scheduler",
    "triage_dumps",
]
