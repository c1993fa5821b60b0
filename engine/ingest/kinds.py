"""What an input is, from its name and its first bytes.

Consumes a relative path, the attribution its name gave and the first kilobytes; produces a
kind name reported in the diagnosis (`inputs[].kind`) and used to route binary inputs: a Flight
Recorder dump goes to hang triage, other binary data is skipped with a warning.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from denpex.events import Attribution
from denpex.telemetry import is_host_file

FR_DUMP = "fr_dump"
BINARY = "binary"
UNREADABLE = "unreadable"
UNREAD_KINDS = frozenset({BINARY, UNREADABLE})
"""Inputs skipped without a line read: binary data of no known format, or unreadable."""

_KERNEL_NAMES = re.compile(r"(?:^|[/_.-])(?:dmesg|kern|kernel|syslog|messages|journal)", re.I)
_SLURM_NAMES = re.compile(r"(?:^|/)slurm-\d+(?:_\d+)?\.(?:out|err)$|(?:^|/)sacct", re.I)
_KUBE_NAMES = re.compile(r"(?:^|[/_.-])(?:kubectl|pod|events?)(?:[/_.-]|$)", re.I)
_TELEMETRY_NAMES = re.compile(r"(?:nvidia-smi|dcgm|nvml|telemetry)", re.I)
_DMESG_LINE = re.compile(rb"^(?:<\d>)?\[\s*\d+\.\d+\] ", re.M)
_LAUNCHER_TEXT = (b"torch/distributed/run.py", b"torch/distributed/elastic", b"torchrun")


def _looks_like_pickle(head: bytes) -> bool:
    return len(head) > 2 and head[0] == 0x80 and 2 <= head[1] <= 5


def _looks_like_fr_json(head: bytes) -> bool:
    stripped = head.lstrip()
    return (
        stripped.startswith(b"{")
        and b'"entries"' in head
        and (b'"pg_config"' in head or b'"version"' in head)
    )


def is_binary(head: bytes) -> bool:
    return b"\x00" in head[:8192]


def kind_of(relative: str, who: Attribution, head: bytes) -> str:
    name = PurePosixPath(relative).name
    if _looks_like_pickle(head) or _looks_like_fr_json(head):
        return FR_DUMP
    if is_binary(head):
        return BINARY
    if who.rank is not None or who.local_rank is not None:
        return "rank_log"
    if _SLURM_NAMES.search(relative):
        return "slurm_output"
    if _KERNEL_NAMES.search(name) or len(_DMESG_LINE.findall(head[:4096])) >= 3:
        return "kernel_log"
    if _TELEMETRY_NAMES.search(name) or is_host_file(name, head):
        return "telemetry"
    if _KUBE_NAMES.search(relative):
        return "kubernetes"
    if any(marker in head for marker in _LAUNCHER_TEXT):
        return "launcher"
    return "log"
