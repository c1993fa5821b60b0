"""Ultralytics YOLO's failure messages, from the source of a pinned release (see source.yaml).

Scope: the `ultralytics` package a training, validation or export run goes through: the argument
and config checks (`cfg/__init__.py`), the datasets, loaders and their label and image checks
(`data/`), the engine (trainer, validator, predictor, exporter, model, tuner: `engine/`), the
task trainers and validators (`models/`), the networks and the weights loader (`nn/tasks.py`,
`nn/autobackend.py`), and the utilities they share (`utils/`: DDP launch in `dist.py`, devices
and AMP in `torch_utils.py` and `checks.py`, downloads, AutoBatch, losses, metrics).

Out of scope: the experiment-tracker callbacks (`utils/callbacks/`: Comet, W&B, ClearML, MLflow,
Neptune, DVC, Ray Tune, HUB), whose warnings say a tracker is not logging, never that the run
failed; the benchmarking helper (`utils/benchmarks.py`), which a training run does not call; and
the interactive tools whose checks are one call's arguments (the SAM and FastSAM prompt
predictors and their modules, `models/sam/`, `models/fastsam/`, and 8.1-8.2's embeddings
Explorer, `data/explorer/`).

Ultralytics' own shapes the shared reader (`catalogs/python_messages.py`) is told about:

- `raise SomeError(emojis(f"..."))`: `emojis()` only strips emoji on Windows consoles, so the
  message is its argument; the call is unwrapped before the shared visitor reads the raise.
- Releases up to 8.3.x's logging rework write the level into the text (`LOGGER.warning("WARNING
  ⚠️ ...")`), later ones get it from `set_logging`'s formatter (`"WARNING ⚠️ " + msg`); the leading
  `WARNING ⚠️ ` (after a `{prefix}` placeholder too) is removed so that one message reads alike in
  every release, and source.yaml's `line_template` puts it back.
- 8.0's exporter and data checks report failures through `LOGGER.info` or `print` (`{prefix}
  export failure ❌ ...`, `print(f"WARNING ⚠️ torchvision==... is incompatible ...")`): an info or
  print call whose literal text says `WARNING ⚠️`, `❌` or `failure` is read as a WARNING (or, for
  `❌` / `failure` without the warning sign, an ERROR).
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from pathlib import Path

from catalogs.python_messages import (
    _assemble,
    _Text,
    _Visitor,
    in_scope,
    release_root,
    to_messages,
    visit_package,
)

EMITTER = "ultralytics"
PACKAGE = "ultralytics/"
INCLUDE = tuple(PACKAGE + p for p in ("cfg/", "data/", "engine/", "models/", "nn/", "utils/"))
EXCLUDE = tuple(
    PACKAGE + p
    for p in (
        "utils/callbacks/",
        "utils/benchmarks.py",
        "models/sam/",
        "models/fastsam/",
        "data/explorer/",
    )
)
# `assert cond, "..."` is a user-facing check in the config and dataset checks; elsewhere an
# assert is an internal invariant unless it states a requirement (python_messages.in_scope).
ASSERT_PATHS = (
    PACKAGE + "cfg/",
    PACKAGE + "data/utils.py",
    PACKAGE + "data/build.py",
    PACKAGE + "utils/checks.py",
    PACKAGE + "utils/torch_utils.py",
)
# the level Ultralytics writes into a message's text before 8.3's formatter did it
_LEVEL_IN_TEXT = re.compile(r"^((?:\{[^{}]*\})?)\s*WARNING ⚠️\s*")
# what an info or print call's text says when it reports a failure (8.0's exporter, data checks)
_FAILURE_MARK = re.compile(r"WARNING ⚠️|❌|\bfailure\b")
_ECHO = {"LOGGER.info", "print"}


class _Unwrap(ast.NodeTransformer):
    """`emojis(x)` -> `x`: the text a raise prints, less the Windows-only emoji stripping."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "emojis" and len(node.args) == 1:
            return node.args[0]
        return node


class _UltralyticsVisitor(_Visitor):
    """The shared visitor, on the tree with `emojis()` unwrapped, that also reads the info and
    print calls whose text reports a failure."""

    def visit_Module(self, node: ast.Module) -> None:
        self.generic_visit(_Unwrap().visit(node))

    def visit_Call(self, node: ast.Call) -> None:
        if node.args and ast.unparse(node.func) in _ECHO:
            out = _Text()
            if _assemble(node.args[0], self.env_stack[-1], out):
                literal = "".join(s for ph, s in out.parts if not ph)
                if _FAILURE_MARK.search(literal) and "✅" not in literal:
                    level = "WARNING" if "⚠️" in literal else "ERROR"
                    self._add(node.args[0], level, node.lineno, len(node.args) > 1)
        super().visit_Call(node)


def _bare(text: str) -> str:
    """The message less the `WARNING ⚠️ ` Ultralytics wrote into it (see the module's notes)."""
    return _LEVEL_IN_TEXT.sub(r"\1", text, count=1)


def extract(checkout: Path, release: str) -> list:
    root = release_root(checkout, release)
    found = [
        f
        for f in visit_package(root, PACKAGE, EXCLUDE, _UltralyticsVisitor)
        if f.file.startswith(INCLUDE) and in_scope(f, ASSERT_PATHS)
    ]
    out = []
    for message in to_messages(found, EMITTER, release):
        text = _bare(message.text)
        out.append(message if text == message.text else replace(message, text=text))
    return out
