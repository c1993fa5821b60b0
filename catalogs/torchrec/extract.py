"""TorchRec's failure messages (github.com/pytorch/torchrec), from the source of a pinned release
(see source.yaml).

Scope: what a recommendation-model training run built on TorchRec prints when it fails:

- the sharding planner (`torchrec/distributed/planner`): "Unable to find a plan for this model
  because of insufficient storage" / "... the strict constraints", the partitioners' and the
  storage reservation's refusals, the constraints and the topology it is given;
- the sharded modules and their lookups (`ShardedEmbeddingBagCollection`,
  `ShardedEmbeddingCollection`, the managed-collision and quantized ones, the FBGEMM TBE kernels
  they wrap), `DistributedModelParallel`, the sharding plan and the sharders, the input and
  output dists, the train pipelines (`torchrec/distributed/train_pipeline`);
- `torchrec/sparse` (KeyedJaggedTensor, JaggedTensor, KeyedTensor, the KJT validator), the
  unsharded modules (`torchrec/modules`: EmbeddingBagCollection, the configs, managed
  collisions) and the optimizers (`torchrec/optim`).

Read with `ast` (`catalogs/python_messages.py`): raises, `logger.error/warning(...)`,
`warnings.warn` and the asserts of the planner and of the plan's construction (elsewhere an
assert counts when its text states a requirement). The planner raises `PlannerError(
error_type=..., message=...)` with the text as a keyword, which the shared reader (the first
positional argument) does not see: those raises are read here, at the level `PlannerError`. The
planner's no-plan errors are a statement ("Unable to find a plan for this model because of
insufficient storage." / "... of the strict constraints.") followed, on lines of their own, by a
"Possible solutions:" list every one of them prints alike; a PlannerError is cut to its first
line, the statement, so that the advice they share does not make the two causes one signature.

Left out: tests and test utilities, benchmarks, the datasets and their scripts, the inference
server and its legacy client, the metrics package (RecMetrics' own validation), the model zoo
and the schema checks. Nothing here decides a class: mapping.yaml does.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

from catalogs.core import Message
from catalogs.python_messages import (
    Found,
    ScopedVisitor,
    _exc_name,
    extract_python,
    release_root,
    to_messages,
    visit_package,
)

EMITTER = "torchrec"
INCLUDE = (
    "torchrec/distributed/",
    "torchrec/sparse/",
    "torchrec/modules/",
    "torchrec/optim/",
    "torchrec/pt2/",
)
EXCLUDE = (
    "torchrec/distributed/test_utils/",
    "torchrec/distributed/benchmark/",
    "torchrec/distributed/planner/tests/",
    "torchrec/sparse/test_utils/",
    "torchrec/optim/test_utils/",
)
# the planner's inputs and the plan's construction check what the user passed with asserts
ASSERT_PATHS = (
    "torchrec/distributed/planner/",
    "torchrec/distributed/sharding_plan.py",
    "torchrec/distributed/model_parallel.py",
)
# exceptions raised with the text as a keyword: `PlannerError(error_type=..., message=...)`
MESSAGE_KEYWORDS = ("message", "msg")


class _KeywordRaises(ScopedVisitor):
    """`raise X(..., message=...)` with no positional text, the message resolved to the
    assignments before it in the same function (as the shared reader resolves a raise)."""

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc
        name = _exc_name(exc) if isinstance(exc, ast.Call) else None
        if isinstance(exc, ast.Call) and name and not exc.args:
            for keyword in exc.keywords:
                if keyword.arg not in MESSAGE_KEYWORDS:
                    continue
                if (out := self.text_of(keyword.value)) is not None:
                    self.record(out.render(), out.style, node.lineno, name)
        self.generic_visit(node)


def _keyword_raises(checkout: Path, release: str) -> list[Message]:
    root = release_root(checkout, release)
    found: list[Found] = []
    for package in INCLUDE:
        if (root / package).is_dir():
            found += visit_package(root, package, EXCLUDE, _KeywordRaises)
    return to_messages(found, EMITTER, release)


def _statement(message: Message) -> Message:
    """A PlannerError's first line: the statement before the advice the planner's errors share."""
    first = message.text.split("\n", 1)[0]
    if message.level != "PlannerError" or first == message.text or not first.strip():
        return message
    return replace(message, text=first)


def extract(checkout: Path, release: str) -> list[Message]:
    found = extract_python(checkout, release, EMITTER, INCLUDE, EXCLUDE, ASSERT_PATHS)
    return [_statement(m) for m in found + _keyword_raises(checkout, release)]
