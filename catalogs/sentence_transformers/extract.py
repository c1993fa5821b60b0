"""sentence-transformers' failure messages, from the source of a pinned release (see source.yaml).

Scope: the `sentence_transformers` package an embedding training or inference run goes through:
the models (SentenceTransformer, CrossEncoder, SparseEncoder and, from 6.0, MultiVectorEncoder)
and their loading, saving and encoding (including multi-process pools), the modules (Transformer,
Pooling, Router, StaticEmbedding, ...), the trainers, training arguments and data collators, the
losses (the cached / GradCache ones, GIST, MNRL and their gathering across devices), the
evaluators, samplers and datasets, the model card, the ONNX / OpenVINO back ends and the
utilities they share. Read with `ast` (`catalogs/python_messages.py`): raises,
`logger.error/warning/warning_once(...)`, `warnings.warn` and the asserts that state a
requirement.

Two shapes the shared reader does not see, read by a visitor of its own:

- a report assembled as a list of lines and raised joined (`error_lines = [f"Error(s) in loading
  state_dict for ...:"]; ...; raise RuntimeError("\\n".join(error_lines))`, 5.x's checkpoint load;
  6.0's `lines = [f"The model {source!r} requires:" if source else "This model requires:", ...]`
  for a model's declared dependencies): the first line is the statement, read as the message
  (both wordings of a conditional first line);
- a message built in a variable and raised stripped (`raise ValueError(error_msg.strip())`,
  NanoBEIR's missing prompts).

Out of scope: a module-level template of another package (`NLTK_IMPORT_ERROR`, transformers'
text) and re-raised exceptions (`raise type(e)(f"{str(e)}...")`), whose words are another
library's.
"""

from __future__ import annotations

import ast
from pathlib import Path

from catalogs.python_messages import (
    ScopedVisitor,
    _exc_name,
    extract_python,
    release_root,
    to_messages,
    visit_package,
)

EMITTER = "sentence_transformers"
PACKAGE = "sentence_transformers/"
INCLUDE = (PACKAGE,)
# the test helpers a user's run never reaches
EXCLUDE = (PACKAGE + "util/testing.py", PACKAGE + "testing_utils.py")
# `assert cond, "..."` counts only where its message states a requirement (python_messages): the
# package's asserts are internal invariants (lengths of the evaluators' lists, a loss's cache).
ASSERT_PATHS: tuple[str, ...] = ()


def _is_join(node: ast.AST) -> ast.AST | None:
    """The list `"\\n".join(name)` joins, or None when `node` is not such a call."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "join"
        and isinstance(node.func.value, ast.Constant)
        and node.func.value.value in ("\n", "\n\n")
        and len(node.args) == 1
    ):
        return node.args[0]
    return None


def _is_strip(node: ast.AST) -> ast.AST | None:
    """The receiver of `x.strip()` / `x.rstrip()`, or None."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("strip", "rstrip")
        and not node.args
    ):
        return node.func.value
    return None


class _JoinedReports(ScopedVisitor):
    """`raise X("\\n".join(lines))` with `lines` a list assigned before it (its first element is
    the statement), and `raise X(msg.strip())`."""

    def _add(self, node: ast.AST, level: str, line: int) -> None:
        if (out := self.text_of(node)) is not None:
            self.record(out.render(), out.style, line, level)

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc
        if isinstance(exc, ast.Call) and exc.args and (level := _exc_name(exc)):
            arg = exc.args[0]
            joined = _is_join(arg)
            stripped = _is_strip(arg)
            if joined is not None:
                if isinstance(joined, ast.Name):
                    joined = self.env_stack[-1].get(joined.id)
                if isinstance(joined, ast.List) and joined.elts:
                    first = joined.elts[0]
                    for part in (
                        (first.body, first.orelse) if isinstance(first, ast.IfExp) else (first,)
                    ):
                        self._add(part, level, node.lineno)
            elif stripped is not None:
                self._add(stripped, level, node.lineno)
        self.generic_visit(node)


def extract(checkout: Path, release: str) -> list:
    found = extract_python(checkout, release, EMITTER, INCLUDE, EXCLUDE, ASSERT_PATHS)
    root = release_root(checkout, release)
    found += to_messages(visit_package(root, PACKAGE, EXCLUDE, _JoinedReports), EMITTER, release)
    return found
