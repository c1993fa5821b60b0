"""NVIDIA NeMo's failure messages, from the source of a pinned release (see source.yaml).

Scope: what a failing NeMo training or fine-tuning run prints from the framework around the
model: `nemo/core` (ModelPT, save/restore connectors, optimizers and schedulers, neural type
checks), `nemo/utils` (exp_manager: log directories, resume and checkpoint callbacks; the
distributed and model utilities), NeMo 2's `nemo/lightning` (the trainer, MegatronStrategy and
FSDP strategies, checkpoint IO, AutoResume, the io connectors that import and export
checkpoints) and the collections' Megatron glue (`nemo/collections/nlp/parts`: NLPDDPStrategy,
the checkpoint IO and save/restore connector overrides, PEFT; NeMo 1's MegatronBaseModel,
MegatronGPTModel and megatron_init; NeMo 2's `nemo/collections/llm`: the models, data modules,
PEFT, the api and the model-optimizer glue). Read with `ast` (`catalogs/python_messages.py`):
raises, `logging.error/warning/critical(...)` through NeMo's logger, `warnings.warn`,
`log_single_rank`, and the asserts that state a requirement (in the configuration and
parallel-state files, every assert).

One shape the shared reader does not see: NeMo reports some failures at info level or with a bare
`print` (the preemption callbacks' "Received SIGTERM, saving checkpoint and exiting", NeMo 1's
"Failed to load optimzier state dicts. Errored with ..."). `logging.info(...)` and `print(...)`
are read, at level INFO and PRINT, when their text names a failure, a signal or preemption (most
info lines report progress and are not read).

Out of scope: the recipes (`llm/recipes/`, factories of configurations that a failed run reaches
only through the checks above), the auto-configurator's search tool and the evaluation
harness adapters (`llm/tools/`, `llm/evaluation/`), notebook helpers, and the loggers'
third-party integrations (MLflow, ClearML, DLLogger), which report their own services.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from catalogs.python_messages import (
    Found,
    ScopedVisitor,
    extract_python,
    release_root,
    to_messages,
    visit_package,
)

EMITTER = "nemo"

INCLUDE = (
    "nemo/core/",
    "nemo/utils/",
    "nemo/lightning/",
    "nemo/collections/llm/",
    "nemo/collections/nlp/parts/",
    "nemo/collections/nlp/models/language_modeling/megatron_base_model.py",
    "nemo/collections/nlp/models/language_modeling/megatron_gpt_model.py",
    "nemo/collections/nlp/modules/common/megatron/megatron_init.py",
)
EXCLUDE = (
    "nemo/collections/llm/recipes/",
    "nemo/collections/llm/tools/",
    "nemo/collections/llm/evaluation/",
    "nemo/utils/notebook_utils.py",
    "nemo/utils/loggers/",
)
# `assert cond, "..."` is a user-facing check in the files that validate the run's configuration
# and parallel layout; elsewhere an assert is an internal invariant unless it states a requirement
# the run did not meet (python_messages).
ASSERT_PATHS = (
    "nemo/utils/exp_manager.py",
    "nemo/lightning/pytorch/strategies/",
    "nemo/lightning/resume.py",
    "nemo/lightning/megatron_init.py",
    "nemo/collections/nlp/modules/common/megatron/megatron_init.py",
    "nemo/collections/nlp/models/language_modeling/megatron_base_model.py",
)


# info lines and prints that report a failure rather than progress
REPORTS_A_FAILURE = re.compile(r"(?i)\bfail|\berror|\babort|preempt|SIGTERM|received signal")
QUIET = {"logging.info": "INFO", "print": "PRINT"}


class _FailureReports(ScopedVisitor):
    """`logging.info(...)` / `print(...)` whose text names a failure, at level INFO / PRINT."""

    def visit_Call(self, node: ast.Call) -> None:
        try:
            called = ast.unparse(node.func)
        except Exception:
            called = ""
        if called in QUIET and node.args:
            out = self.text_of(node.args[0])
            if out is not None and REPORTS_A_FAILURE.search(text := out.render()):
                style = out.style
                if style == "literal" and len(node.args) > 1 and "%" in text:
                    style = "printf"
                self.record(text, style, node.lineno, QUIET[called])
        self.generic_visit(node)


def _reports(checkout: Path, release: str) -> list:
    root = release_root(checkout, release)
    found: list[Found] = []
    for package in INCLUDE:
        # a single module is walked through its folder and kept to that file
        folder = package.rpartition("/")[0] + "/" if package.endswith(".py") else package
        found += [
            f
            for f in visit_package(root, folder, EXCLUDE, _FailureReports)
            if f.file.startswith(package)
        ]
    return to_messages(found, EMITTER, release)


def extract(checkout: Path, release: str) -> list:
    found = extract_python(checkout, release, EMITTER, INCLUDE, EXCLUDE, ASSERT_PATHS)
    return found + _reports(checkout, release)
