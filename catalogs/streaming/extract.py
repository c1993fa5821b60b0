"""MosaicML Streaming's failure messages (github.com/mosaicml/streaming: `StreamingDataset`, its
streams, shard readers and writers, the shared-memory state its ranks and DataLoader workers
share, the local cache and its limit, and the downloaders of each cloud store), from the source
of a pinned release (see source.yaml).

Scope: the library (`streaming/base/`) and the dataset classes built on it (`streaming/text`,
`streaming/vision`, `streaming/multimodal`); the `convert/` scripts that write public datasets
to MDS are offline tools, out of scope. Read with `ast` (`catalogs/python_messages.py`): raises
(level: the exception's name), `logger.warning/error(...)` and `warnings.warn(...)` (WARNING,
ERROR) and the asserts that state a requirement. `logger.info/debug` report progress and are
not read.

Two shapes print a text the shared reader does not see, read here too:

- `wait_for_file_to_exist(filename, tick, timeout, err_msg)` (streaming/base/util.py) raises
  `RuntimeError(err_msg + '<timeout> < <waited> secs.')` when the file never appears: the index
  file a non-leader rank waits for its local leader to download. The `err_msg` each call site
  passes is the message (level RuntimeError), with the helper's suffix after it.
- `raise ValueError(GCS_ERROR_NO_AUTHENTICATION)`: a text held in a module-level constant (the
  shared reader resolves only names assigned in the same function).
"""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

from catalogs.python_messages import (
    ScopedVisitor,
    _exc_name,
    extract_python,
    release_root,
    to_messages,
    visit_package,
)

EMITTER = "streaming"
INCLUDE = ("streaming/",)
# dataset conversion scripts (run once, offline) and the package's own version module
EXCLUDE = (
    "streaming/text/convert/",
    "streaming/vision/convert/",
    "streaming/multimodal/convert/",
    "streaming/_version.py",
)
# asserts in these files check the arguments a user gives StreamingDataset and its streams
ASSERT_PATHS = ("streaming/base/dataset.py", "streaming/base/stream.py")
# Python 3 prints the aliases of OSError by its own name ("raise IOError(...)" -> "OSError: ...")
ALIASES = {"IOError": "OSError", "EnvironmentError": "OSError"}
# the helper that raises RuntimeError(err_msg + suffix), the position of err_msg, the suffix
WAIT_HELPER = "wait_for_file_to_exist"
WAIT_MESSAGE_AT = 3
# the helper's suffix, as (is a placeholder, text) parts
WAIT_SUFFIX = ((True, "{timeout:.3f}"), (False, " < "), (True, "{dt:.3f}"), (False, " secs."))


class _OtherShapes(ScopedVisitor):
    """The waits whose timeout raises the caller's text, and raises of a module-level constant."""

    def __init__(self, rel: str) -> None:
        super().__init__(rel)
        self.constants: dict[str, ast.AST] = {}

    def visit_Module(self, node: ast.Module) -> None:
        self.constants = _module_constants(node)
        self.generic_visit(node)

    def _add(
        self,
        node: ast.AST,
        level: str,
        line: int,
        suffix: tuple[tuple[bool, str], ...] = (),
    ) -> None:
        if (out := self.text_of(node, env={})) is not None:
            for is_placeholder, part in suffix:
                (out.expr if is_placeholder else out.lit)(part)
            self.record(out.render(), out.style, line, level)

    def visit_Call(self, node: ast.Call) -> None:
        if _exc_name(node.func) == WAIT_HELPER and len(node.args) > WAIT_MESSAGE_AT:
            self._add(node.args[WAIT_MESSAGE_AT], "RuntimeError", node.lineno, WAIT_SUFFIX)
        self.generic_visit(node)

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc
        if (
            isinstance(exc, ast.Call)
            and exc.args
            and isinstance(exc.args[0], ast.Name)
            and exc.args[0].id in self.constants
        ):
            name = _exc_name(exc)
            if name:
                self._add(self.constants[exc.args[0].id], name, node.lineno)
        self.generic_visit(node)


def _module_constants(tree: ast.Module) -> dict[str, ast.AST]:
    """The module's `NAME = "text"` assignments (upper-case names, string values)."""
    constants: dict[str, ast.AST] = {}
    for statement in tree.body:
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
            and statement.targets[0].id.isupper()
            and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str)
        ):
            constants[statement.targets[0].id] = statement.value
    return constants


def _other_messages(checkout: Path, release: str) -> list:
    root = release_root(checkout, release)
    return to_messages(visit_package(root, "streaming", EXCLUDE, _OtherShapes), EMITTER, release)


def extract(checkout: Path, release: str) -> list:
    found = extract_python(checkout, release, EMITTER, INCLUDE, EXCLUDE, ASSERT_PATHS)
    found += _other_messages(checkout, release)
    return [replace(m, level=ALIASES.get(m.level, m.level)) for m in found]
