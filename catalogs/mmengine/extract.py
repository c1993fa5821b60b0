"""OpenMMLab MMEngine's failure messages, from the source of a pinned release (see source.yaml).

Scope: the `mmengine` package a training or test run goes through: the Runner and its loops
(runner/, and the FlexibleRunner's strategies in _strategy/: DeepSpeed, FSDP, ColossalAI), the
distributed helpers (dist/), the config system (config/), the registries that build every
component from it (registry/), the hooks (checkpointing, logging, EMA, profiling, ...), the
optimizer wrappers and parameter schedulers (optim/), the model wrappers and weight
initialisation (model/), checkpoint loading and saving (runner/checkpoint.py), file I/O and its
storage back ends (fileio/), the visualization back ends (visualization/), the datasets and
evaluator, the logging and message hub, the device helpers and the utilities.

Out of scope: the test helpers (`testing/`, a user's run never reaches them), the model
complexity analysis (`analysis/`, an offline tool) and the inferencer base (`infer/`, which
serves downstream libraries' inference APIs, not a training run).

Read with `ast` (`catalogs/python_messages.py`): raises (level: the exception's name),
`logger.warning/error(...)` (runner.logger, MMLogger.get_current_instance()), `warnings.warn`
and the asserts that state a requirement (all asserts in the files that check a user's config).
MMEngine logs mostly through its own `print_log(msg, logger='current', level=logging.WARNING)`,
whose level is an argument (keyword or third positional; INFO when absent), read here: its
WARNING, ERROR and CRITICAL calls, and its INFO calls whose text reports a failure ("Did not find
last_checkpoint to be resumed.", "cannot parse key ..."); the other INFO calls report progress.

One shape the shared reader does not see: a report assembled in a list, each piece appended and
the list joined into the text that is raised or logged (`load_state_dict`'s "The model and
loaded state dict do not match exactly" / "missing keys in source state_dict: ..." /
"unexpected key in source state_dict: ...", a RuntimeError when strict, a print_log WARNING
otherwise). Each appended piece is read as a message at the level of every raise or print_log
of that list's name in the same function: a line of the report matches on its own.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from pathlib import Path

from catalogs.python_messages import (
    ScopedVisitor,
    _exc_name,
    _level_name,
    extract_python,
    in_scope,
    release_root,
    to_messages,
    visit_package,
)

EMITTER = "mmengine"
PACKAGE = "mmengine/"
INCLUDE = (PACKAGE,)
EXCLUDE = (PACKAGE + "testing/", PACKAGE + "analysis/", PACKAGE + "infer/")
# `assert cond, "..."` is a user-facing check of the config in the Runner's and the builders'
# files; elsewhere an assert is an internal invariant unless it states a requirement.
ASSERT_PATHS = (
    PACKAGE + "runner/runner.py",
    PACKAGE + "runner/_flexible_runner.py",
    PACKAGE + "optim/optimizer/builder.py",
    PACKAGE + "optim/optimizer/default_constructor.py",
    PACKAGE + "config/config.py",
)
# Python 3 prints the aliases of OSError by its own name ("raise IOError(...)" -> "OSError: ...")
ALIASES = {"IOError": "OSError", "EnvironmentError": "OSError"}
PRINT_LOG = "print_log"
# print_log(msg, logger=None, level=logging.INFO): where its level argument sits
LEVEL_AT = 2
# an INFO print_log that reports a failure rather than progress
REPORTS_A_FAILURE = re.compile(
    r"(?i)\bfail|\berror|\bcannot\b|\bcan not\b|\bnot found\b|\bdid not find\b|\bunable\b"
)


def _print_log_level(node: ast.Call) -> str | None:
    """The level a print_log call logs at: WARNING / ERROR / CRITICAL / INFO, None for DEBUG or
    a level held in a variable."""
    level_node = next((k.value for k in node.keywords if k.arg == "level"), None)
    if level_node is None and len(node.args) > LEVEL_AT:
        level_node = node.args[LEVEL_AT]
    if level_node is None:
        return "INFO"
    level = _level_name(level_node)  # logging.INFO and DEBUG give None
    if level is None and (_exc_name(level_node) or "") == "INFO":
        return "INFO"
    return level


class _PrintLog(ScopedVisitor):
    """`print_log(msg, logger=..., level=...)` with the level it names, and the pieces of a
    report assembled in a list (`err_msg.append("..."); raise RuntimeError(err_msg)`)."""

    def __init__(self, file: str) -> None:
        super().__init__(file)
        # per function: list name -> the pieces appended to it (message node, line)
        self.pieces: list[dict[str, list[tuple[ast.AST, int]]]] = [{}]

    def _scope(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.pieces.append({})
        super()._scope(node)
        self.pieces.pop()

    visit_FunctionDef = _scope
    visit_AsyncFunctionDef = _scope

    def _add(self, msg: ast.AST, level: str, line: int, failure_only: bool) -> None:
        out = self.text_of(msg)
        if out is None:
            return
        text = out.render()
        if failure_only and not REPORTS_A_FAILURE.search(text):
            return
        self.record(text, out.style, line, level)

    def _add_pieces(self, arg: ast.AST, level: str) -> None:
        if isinstance(arg, ast.Name):
            for piece, line in self.pieces[-1].get(arg.id, ()):
                self._add(piece, level, line, False)

    def visit_Call(self, node: ast.Call) -> None:
        f = node.func
        if _exc_name(f) == PRINT_LOG and node.args:
            level = _print_log_level(node)
            if level is not None:
                self._add(node.args[0], level, node.lineno, level == "INFO")
                self._add_pieces(node.args[0], level)
        elif (
            isinstance(f, ast.Attribute)
            and isinstance(f.value, ast.Name)
            and f.attr in {"append", "insert"}
            and len(node.args) == (1 if f.attr == "append" else 2)
        ):
            self.pieces[-1].setdefault(f.value.id, []).append((node.args[-1], node.lineno))
        self.generic_visit(node)

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc
        if isinstance(exc, ast.Call) and exc.args:
            name = _exc_name(exc)
            if name:
                self._add_pieces(exc.args[0], name)
        self.generic_visit(node)


def _print_logs(checkout: Path, release: str) -> list:
    root = release_root(checkout, release)
    found = visit_package(root, PACKAGE, EXCLUDE, _PrintLog)
    return to_messages([f for f in found if in_scope(f, ASSERT_PATHS)], EMITTER, release)


def extract(checkout: Path, release: str) -> list:
    found = extract_python(checkout, release, EMITTER, INCLUDE, EXCLUDE, ASSERT_PATHS)
    found += _print_logs(checkout, release)
    return [replace(m, level=ALIASES.get(m.level, m.level)) for m in found]
