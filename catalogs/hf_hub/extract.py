"""huggingface_hub's failure messages, from the source of a pinned release (see source.yaml).

Scope: what a training or serving run goes through when it fetches or pushes files: downloads
(file_download, snapshot_download, the local-dir and cache layout, the Xet back end), the HTTP
layer and its errors (utils/_http.py, utils/_errors.py in 0.x, errors.py), authentication and
tokens (_login, utils/_auth, utils/_headers), repo-id validation, file locks (utils/_fixes),
uploads (hf_api, _commit_api, lfs, the commit scheduler and large-folder uploads),
HfFileSystem, the model mixins, serialization (split/save of torch state dicts) and the strict
dataclasses Transformers 5 validates configs with. Read with `ast`
(`catalogs/python_messages.py`): raises, `logger.error/warning(...)`, `warnings.warn` and the
asserts that state a requirement.

Out of scope: the CLI (`commands/` in 0.x, `cli/`), the inference client and its providers,
Spaces, Jobs, Inference Endpoints, webhooks, OAuth for Gradio apps, repo cards, community
(discussions), the fastai/Keras/TensorBoard integrations, the DDUF format, sandboxes and
storage buckets: none of them prints into a training run's log.

From 1.x every HTTP error is built by `_format(ErrorClass, message, response, ...)` and raised
by its caller (`raise _format(RepositoryNotFoundError, message, response) from e`): the shared
reader sees a raise of `_format`, so those calls are read here at the class they build. The cache's
file lock reports a lock it is still waiting for with `logger.info` (level INFO here), read too.
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

EMITTER = "hf_hub"
PACKAGE = "src/huggingface_hub/"
INCLUDE = (PACKAGE,)
EXCLUDE = tuple(
    PACKAGE + p
    for p in (
        "commands/",
        "cli/",
        "inference/",
        "inference_api.py",
        "_inference_endpoints.py",
        "_space_api.py",
        "_jobs_api.py",
        "_webhooks_payload.py",
        "_webhooks_server.py",
        "_oauth.py",
        "utils/_oauth_device.py",
        "_hot_reload/",
        "_sandbox.py",
        "_sandbox_cache.py",
        "_buckets.py",
        "_dataset_viewer.py",
        "_eval_results.py",
        "community.py",
        "repocard.py",
        "repocard_data.py",
        "templates/",
        "fastai_utils.py",
        "keras_mixin.py",
        "_tensorboard_logger.py",
        "serialization/_dduf.py",
        "serialization/_tensorflow.py",
    )
)
# `_format(ErrorClass, message, response, ...)`: the positions of the class and of the message
THROWERS = {"_format": (0, 1)}
# The cache's file lock (WeakFileLock) reports a lock it keeps waiting for at INFO every 10 s, the
# one line a download stalled behind another process's lock prints; other INFO lines are progress.
INFO_FILES = (PACKAGE + "utils/_fixes.py",)
# Python 3 prints the aliases of OSError by its own name ("raise EnvironmentError(...)" ->
# "OSError: ...").
ALIASES = {"IOError": "OSError", "EnvironmentError": "OSError"}


class _Throwers(ScopedVisitor):
    """Calls of a helper that builds the exception its caller raises, with the message resolved
    to the assignments before it in the same function (as the shared reader resolves a raise)."""

    def visit_Call(self, node: ast.Call) -> None:
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        if name in THROWERS and len(node.args) > max(THROWERS[name]):
            at_class, at_message = THROWERS[name]
            cls = node.args[at_class]
            level = cls.id if isinstance(cls, ast.Name) else None
            out = _Text()
            if (
                level
                and _assemble(node.args[at_message], self.env_stack[-1], out)
                and out.has_literal()
            ):
                self._add(out, level, node.lineno)
        elif (
            self.file in INFO_FILES
            and isinstance(f, ast.Attribute)
            and f.attr == "info"
            and "log" in ast.unparse(f.value).lower()
            and node.args
        ):
            out = _Text()
            if _assemble(node.args[0], self.env_stack[-1], out) and out.has_literal():
                if out.style == "literal" and len(node.args) > 1:
                    out.style = "printf"  # logger.info("... %s", lock_file)
                self._add(out, "INFO", node.lineno)
        self.generic_visit(node)

    def _add(self, out: _Text, level: str, line: int) -> None:
        self.found.append(
            Found(out.render(), out.style, self.file, line, level, self.func_stack[-1])
        )


def _thrown(checkout: Path, release: str) -> list:
    root = release_root(checkout, release)
    return to_messages(visit_package(root, PACKAGE, EXCLUDE, _Throwers), EMITTER, release)


def extract(checkout: Path, release: str) -> list:
    found = extract_python(checkout, release, EMITTER, INCLUDE, EXCLUDE)
    found += _thrown(checkout, release)
    return [replace(m, level=ALIASES.get(m.level, m.level)) for m in found]
