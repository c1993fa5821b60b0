"""Hugging Face datasets' failure messages, from the source of a pinned release (see source.yaml).

Scope: the `datasets` package a training run goes through when it loads and prepares data:
`load_dataset` and the module factories (load.py: Hub and local datasets, loading scripts,
configs), the builders and the Arrow writer and reader (builder.py, arrow_writer.py,
arrow_reader.py: generation, the cache, its locks and fingerprints), splits and verification,
features and casts (features/, table.py), Dataset and IterableDataset operations (map, filter,
select, formatting: arrow_dataset.py, iterable_dataset.py, fingerprint.py), streaming
(download/, utils/file_utils.py), data files and patterns (data_files.py), the packaged builders
(json, csv, parquet, arrow, text, image/audio folders, webdataset, ...) and the utilities. Read with
`ast` (`catalogs/python_messages.py`): raises, `logger.error/warning(...)`, `warnings.warn` and the
asserts that state a requirement.

Out of scope: the `datasets-cli` commands (`commands/`), which a training run does not print.

One shape the shared reader does not see: an exception class's constructor called outside a
`raise` (`return cls("An error occurred while generating the dataset" + explanation_message ...)`
in `DatasetGenerationCastError.from_cast_error`, whose caller raises what it returns), read at
the class that defines the method.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

from catalogs.python_messages import (
    Found,
    ScopedVisitor,
    _assemble,
    _Text,
    extract_python,
    release_root,
    to_messages,
    visit_package,
)

EMITTER = "hf_datasets"
PACKAGE = "src/datasets/"
INCLUDE = (PACKAGE,)
EXCLUDE = (PACKAGE + "commands/",)
# Python 3 prints the aliases of OSError by its own name ("raise EnvironmentError(...)" ->
# "OSError: ...").
ALIASES = {"IOError": "OSError", "EnvironmentError": "OSError"}


class _ClassConstructors(ScopedVisitor):
    """`cls(...)` inside a classmethod of an exception class: the exception the method builds for
    its caller to raise, with the message resolved to the assignments before it."""

    def __init__(self, rel: str) -> None:
        super().__init__(rel)
        self.classes: list[str] = []

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.classes.append(node.name)
        self.generic_visit(node)
        self.classes.pop()

    def visit_Call(self, node: ast.Call) -> None:
        f = node.func
        if (
            isinstance(f, ast.Name)
            and f.id == "cls"
            and node.args
            and self.classes
            and self.classes[-1].endswith(("Error", "Exception"))
        ):
            out = _Text()
            if _assemble(node.args[0], self.env_stack[-1], out) and out.has_literal():
                self.found.append(
                    Found(
                        out.render(),
                        out.style,
                        self.file,
                        node.lineno,
                        self.classes[-1],
                        self.func_stack[-1],
                    )
                )
        self.generic_visit(node)


def _built(checkout: Path, release: str) -> list:
    root = release_root(checkout, release)
    return to_messages(visit_package(root, PACKAGE, EXCLUDE, _ClassConstructors), EMITTER, release)


def extract(checkout: Path, release: str) -> list:
    found = extract_python(checkout, release, EMITTER, INCLUDE, EXCLUDE)
    found += _built(checkout, release)
    return [replace(m, level=ALIASES.get(m.level, m.level)) for m in found]
