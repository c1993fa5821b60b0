"""hivemind's failure messages (the `hivemind` package), from the source of a pinned release (see
source.yaml).

Scope: the whole package (`hivemind/`): the p2p layer (p2p_daemon.py, which starts and talks to
the go-libp2p daemon `p2pd`, the daemon bindings and the servicer), the DHT (node, protocol,
routing, traversal, validation), the averaging (averager, matchmaking, allreduce, partition,
key manager), the optimizers (hivemind.Optimizer, its state and gradient averagers, the progress
tracker, GradScaler), mixture of experts (client, server, runtime), compression and the utilities
(multiaddr parsing, streaming, serialization, networking). Read with `ast`
(`catalogs/python_messages.py`): raises, `logger.error/warning/exception(...)`, `warnings.warn`
and the asserts that state a requirement; tests, benchmarks and examples are out of scope.

hivemind's optimizers and averagers also report their rounds with
`logger.log(self.status_loglevel, ...)`: INFO when the user passes `verbose=True` (as hivemind's
collaborative-training examples do), DEBUG otherwise. Those calls are
read too, at the level `STATUS` (printed as INFO), so the failure reports among them ("Averaging
gradients failed with ...") are matched; mapping.yaml keeps the progress reports as context.
`logger.debug` and plain `logger.info` calls are not read.

Two other shapes print a text the raise reader does not see: an exception built outside a
`raise` and handed to a future (`ready.set_exception(P2PDaemonError(f"Daemon failed to start:
{last_line}"))`, the error `P2P.create` raises when p2pd exits before it is ready), read at the
exception's name; and an exception class that writes its own text
(`super().__init__("Invalid MultiAddr {0!r}: {1}".format(...))` in the multiaddr parser hivemind
vendors since 1.1.11), read at the class's name.

The daemon's own messages (`p2pd`, Go: "failed to connect to bootstrap peers") are not in this
repository: hivemind's setup.py downloads a prebuilt p2pd binary built from
github.com/learning-at-home/go-libp2p-daemon, so they reach the log only through the texts read
here ("Daemon failed to start: ...", the `ControlFailure`s of the bindings).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from catalogs.python_messages import (
    Found,
    _assemble,
    _expr_text,
    _Text,
    extract_python,
    release_root,
    to_messages,
    visit_package,
)

EMITTER = "hivemind"
INCLUDE = ("hivemind/",)
# the protobuf modules generated at build time are not in the source; the CLI's config is YAML
EXCLUDE = ("hivemind/proto/",)
# asserts in these files check the arguments a user passes to hivemind's public API
ASSERT_PATHS = (
    "hivemind/optim/optimizer.py",
    "hivemind/averaging/averager.py",
    "hivemind/dht/dht.py",
    "hivemind/p2p/p2p_daemon.py",
    "hivemind/moe/server/server.py",
)
STATUS = "STATUS"
_STATUS_LEVEL = "self.status_loglevel"


_EXCEPTION_NAME = re.compile(r"(?:Error|Exception|Failure)$")
_NOT_EXCEPTIONS = {"RPCError"}  # hivemind's protobuf error message, not a Python exception


def _exception_name(node: ast.AST) -> str | None:
    """The name of the exception class `node` calls (`P2PDaemonError(...)`), else None."""
    if not isinstance(node, ast.Call):
        return None
    f = node.func
    name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
    if name is None or name in _NOT_EXCEPTIONS or not _EXCEPTION_NAME.search(name):
        return None
    return name


class _OtherCalls(ast.NodeVisitor):
    """What the shared reader (raises, logger calls, asserts) does not see: the optimizers'
    `logger.log(self.status_loglevel, "...")` reports, exceptions built outside a `raise`, and the
    texts exception classes give `super().__init__(...)`."""

    def __init__(self, rel: str) -> None:
        self.rel = rel
        self.found: list[Found] = []
        self.functions: list[str] = ["<module>"]
        self.classes: list[tuple[str, bool]] = []  # (name, is an exception class)
        self.exception_classes: set[str] = set()
        self.raised: set[int] = set()  # the calls a `raise` names: python_messages reads those
        self.assigned: list[dict[str, list[ast.AST]]] = [{}]  # a function's `name = ...`, in order

    def _add(self, node: ast.AST, level: str, line: int, extra_args: bool) -> None:
        out = _Text()
        if _assemble(node, {}, out) and out.has_literal():
            style = out.style
            if style == "literal" and extra_args:
                style = "printf"
            self.found.append(Found(out.render(), style, self.rel, line, level, self.functions[-1]))

    def _scope(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.functions.append(node.name)
        self.assigned.append({})
        self.generic_visit(node)
        self.assigned.pop()
        self.functions.pop()

    def visit_Assign(self, node: ast.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self.assigned[-1].setdefault(node.targets[0].id, []).append(node.value)
        self.generic_visit(node)

    visit_FunctionDef = _scope
    visit_AsyncFunctionDef = _scope

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        bases = {_expr_text(b).rsplit(".", 1)[-1] for b in node.bases}
        is_exception = any(
            b in self.exception_classes or _EXCEPTION_NAME.search(b) or b == "LookupError"
            for b in bases
        )
        if is_exception:
            self.exception_classes.add(node.name)
        self.classes.append((node.name, is_exception))
        self.generic_visit(node)
        self.classes.pop()

    def visit_Raise(self, node: ast.Raise) -> None:
        if node.exc is not None:
            self.raised.add(id(node.exc))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        f = node.func
        name = _exception_name(node)
        if (
            isinstance(f, ast.Attribute)
            and f.attr == "log"
            and "log" in _expr_text(f.value).lower()
            and len(node.args) >= 2
            and _expr_text(node.args[0]) == _STATUS_LEVEL
        ):
            self._add(node.args[1], STATUS, node.lineno, len(node.args) > 2)
        elif name is not None and node.args and id(node) not in self.raised:
            self._add(node.args[0], name, node.lineno, len(node.args) > 1)
        elif (
            isinstance(f, ast.Attribute)
            and f.attr == "__init__"
            and _expr_text(f.value) == "super()"
            and node.args
            and self.classes
            and self.classes[-1][1]
            and self.functions[-1] == "__init__"
        ):
            # a text built in either branch before the call (`message = "...".format(...)`)
            arg = node.args[0]
            texts = self.assigned[-1].get(arg.id, []) if isinstance(arg, ast.Name) else [arg]
            for text in texts:
                self._add(text, self.classes[-1][0], node.lineno, len(node.args) > 1)
        self.generic_visit(node)


def _other_messages(checkout: Path, release: str) -> list:
    root = release_root(checkout, release)
    return to_messages(visit_package(root, "hivemind", EXCLUDE, _OtherCalls), EMITTER, release)


def extract(checkout: Path, release: str) -> list:
    return extract_python(
        checkout, release, EMITTER, INCLUDE, EXCLUDE, ASSERT_PATHS
    ) + _other_messages(checkout, release)
