"""The text a draft signature is checked against: healthy logs and labelled cases, line by line.

Consumes the healthy paths and labelled case directories of `CurationSettings`; produces
`TextLine`s (where a line was read, its text, the class of the case it belongs to) and the
labelled cases themselves. Only text files are read (Flight Recorder dumps and other binary
files are skipped), each up to `MAX_FILE_BYTES`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from denpex.retrieval.corpus import LabelledCase, load_corpora

MAX_FILE_BYTES = 16 * 1024 * 1024
_SKIPPED = {"expected.json", "README.md"}


@dataclass(frozen=True)
class TextLine:
    where: str
    text: str
    failure_class: str | None = None
    """The case's class; None for a healthy log."""


def _files(path: Path) -> Iterator[Path]:
    if path.is_file():
        yield path
        return
    for found in sorted(path.rglob("*")):
        if found.is_file() and found.name not in _SKIPPED and found.suffix != ".py":
            yield found


def _read(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None  # a binary file (a pickled Flight Recorder dump)
    return data.decode("utf-8", errors="replace")


def lines_of(paths: Iterable[Path], failure_class: str | None = None) -> list[TextLine]:
    lines: list[TextLine] = []
    for path in paths:
        for file in _files(path):
            text = _read(file)
            if text is None:
                continue
            for number, line in enumerate(text.splitlines(), start=1):
                if line.strip():
                    lines.append(TextLine(f"{file}:{number}", line, failure_class))
    return lines


def labelled_cases(eval_dirs: Iterable[Path]) -> list[LabelledCase]:
    dirs = list(eval_dirs)
    return load_corpora(dirs) if dirs else []


def healthy_paths(healthy: Iterable[Path], cases: Iterable[LabelledCase]) -> list[Path]:
    """The healthy logs: the configured ones and every clean labelled case."""
    paths = [p for root in healthy for p in ([root] if root.is_file() else sorted(root.iterdir()))]
    return [
        *(p for p in paths if p.name not in _SKIPPED and p.suffix != ".py"),
        *(c.directory for c in cases if c.failure_class is None),
    ]


def case_lines(cases: Iterable[LabelledCase]) -> list[TextLine]:
    """Every line of every labelled failure case, with its class."""
    return [
        line
        for case in cases
        if case.failure_class is not None
        for line in lines_of([Path(p) for p in case.inputs], case.failure_class)
    ]
