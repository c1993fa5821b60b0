"""nanotron's failure messages, from the source of a pinned release (see source.yaml).

Scope: the `nanotron` package a training run drives: the configuration and its validation, the
parallel context (process groups, the data/tensor/pipeline/context/expert mesh), the pipeline
engine and its p2p, tensor and tied parameters, ZeRO and the optimizers, checkpoint save/load
(`serialize/`, the S3 upload), the data stages and datasets, the trainer and its sanity checks;
raises, logger errors and warnings, nanotron's `log_rank(msg, logger=..., level=...)` and
`warn_once(msg, ...)` at warning level and above, and the asserts of the configuration, parallel
and checkpoint code. Out of scope: the examples, tests and scripts outside `src/nanotron`.
"""

from __future__ import annotations

import ast
from pathlib import Path

from catalogs import python_messages as pm

INCLUDE = ("src/nanotron/",)
EXCLUDE: tuple[str, ...] = ()
# `assert cond, "..."` is a user-facing check in the configuration, the parallel set-up, the
# pipeline engine's schedule (the micro-batches a pipeline of that depth needs), the trainer and
# checkpoint loading (it names the setting or file that does not fit); elsewhere an assert is an
# internal invariant.
ASSERT_PATHS = (
    "src/nanotron/config/",
    "src/nanotron/parallel/context.py",
    "src/nanotron/parallel/pipeline_parallel/engine.py",
    "src/nanotron/trainer.py",
    "src/nanotron/serialize/",
    "src/nanotron/data/",
    "src/nanotron/dataloader.py",
    "src/nanotron/helpers.py",
)
# warn_once(msg, logger, ...) always logs at WARNING.
NAMED = {"warn_once": "WARNING"}


class _LogRankVisitor(pm._Visitor):
    """Only nanotron's `log_rank(msg, logger=..., level=logging.X)` calls (the shared visitor
    reads the raises, logger calls and asserts)."""

    def visit_Raise(self, node: ast.Raise) -> None:
        self.generic_visit(node)

    def visit_Assert(self, node: ast.Assert) -> None:
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if pm._exc_name(node.func) == "log_rank":
            kw = {k.arg: k.value for k in node.keywords if k.arg}
            msg = node.args[0] if node.args else kw.get("msg")
            lvl = kw.get("level") or (node.args[2] if len(node.args) > 2 else None)
            level = pm._level_name(lvl) if lvl is not None else None
            if msg is not None and level:
                self._add(msg, level, node.lineno, False)
        self.generic_visit(node)


def _log_rank_messages(root: Path) -> list:
    found = []
    for p in sorted(root.rglob("*.py")):
        rel = p.relative_to(root).as_posix()
        if not rel.startswith(INCLUDE):
            continue
        try:
            tree = ast.parse(p.read_text(encoding="utf-8", errors="replace"), filename=rel)
        except (SyntaxError, ValueError):
            continue
        v = _LogRankVisitor(rel)
        v.visit(tree)
        found.extend(v.found)
    return found


def extract(checkout: Path, release: str) -> list:
    root = pm.release_root(checkout, release)
    msgs = pm.extract_python(
        checkout, release, "nanotron", INCLUDE, EXCLUDE, ASSERT_PATHS, named=NAMED
    )
    return msgs + pm.to_messages(_log_rank_messages(root), "nanotron", release)
