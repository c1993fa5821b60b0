"""Keras 3's failure messages for distributed and multi-device runs, from the source of a pinned
release (see source.yaml).

Scope (Python, read with `ast` through catalogs/python_messages.py: raises, `warnings.warn`,
absl `logging.warning/error`):

- the distribution API (`keras/src/distribution/`: DeviceMesh, TensorLayout, LayoutMap,
  DataParallel, ModelParallel, `initialize`) and the backends' halves of it
  (`keras/src/backend/{jax,tensorflow,torch}/distribution_lib.py`; torch has none in the pinned
  lines), the TensorFlow backend's optimizer (its tf.distribute gradient all-reduce);
- fit/compile/evaluate: `keras/src/trainers/` (compile utilities, the data adapters and the
  epoch iterator), the backends' trainers (`keras/src/backend/*/trainer.py`), `keras/src/models/`;
- saving and loading: `keras/src/saving/`, the legacy H5 loader
  (`keras/src/legacy/saving/legacy_h5_format.py`, what `load_model("x.h5")` and
  `load_weights("x.h5")` run), the checkpoint callbacks (`keras/src/callbacks/model_checkpoint.py`,
  `backup_and_restore.py`: the fault tolerance of multi-worker training), and the loading halves
  that report a checkpoint that does not fit the model: a layer's and an optimizer's
  `load_own_variables` / `set_weights` (`keras/src/layers/layer.py`,
  `keras/src/optimizers/base_optimizer.py`) and `Variable.assign`'s shape check
  (`keras/src/backend/common/variables.py`), which `load_weights` reaches with a saved value of
  another shape;
- the shape checks every layer call runs (`keras/src/layers/input_spec.py`: "Input 0 of layer
  ... is incompatible with the layer").

Tests (`*_test.py`, `testing/`) are left out. `warnings.warn(...)` is level `UserWarning` (or
the category it passes), absl's `logging.warning/error` stays `WARNING`/`ERROR`: their lines
differ (source.yaml's line_template).
"""

from __future__ import annotations

import ast
from pathlib import Path

from catalogs.python_messages import Found, release_root, scan, to_messages

EMITTER = "keras"
INCLUDE = (
    "keras/src/distribution/",
    "keras/src/backend/jax/distribution_lib.py",
    "keras/src/backend/tensorflow/distribution_lib.py",
    "keras/src/backend/torch/distribution_lib.py",
    "keras/src/backend/jax/trainer.py",
    "keras/src/backend/tensorflow/trainer.py",
    "keras/src/backend/torch/trainer.py",
    "keras/src/backend/tensorflow/optimizer.py",
    "keras/src/trainers/",
    "keras/src/models/",
    "keras/src/saving/",
    "keras/src/legacy/saving/legacy_h5_format.py",
    "keras/src/callbacks/model_checkpoint.py",
    "keras/src/callbacks/backup_and_restore.py",
    "keras/src/layers/input_spec.py",
    "keras/src/layers/layer.py",
    "keras/src/optimizers/base_optimizer.py",
    "keras/src/backend/common/variables.py",
)
# In these files only the functions that load saved values into the model's variables are read;
# the rest of a layer's, an optimizer's and a variable's checks are API use, not a checkpoint.
FUNCTIONS = {
    "keras/src/layers/layer.py": {"load_own_variables", "_check_load_own_variables", "set_weights"},
    "keras/src/optimizers/base_optimizer.py": {"load_own_variables", "set_weights"},
    "keras/src/backend/common/variables.py": {"assign"},
}


def _warn_categories(path: Path) -> dict[int, str]:
    """The line of each `warnings.warn(...)` call and the category it passes (UserWarning when
    it passes none, or something that is not a Warning class)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (SyntaxError, ValueError):
        return {}
    found: dict[int, str] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        func = node.func
        if func.attr != "warn" or not isinstance(func.value, ast.Name):
            continue
        if func.value.id != "warnings":
            continue
        category: ast.AST | None = node.args[1] if len(node.args) > 1 else None
        for keyword in node.keywords:
            if keyword.arg == "category":
                category = keyword.value
        name = ""
        if isinstance(category, ast.Name):
            name = category.id
        elif isinstance(category, ast.Attribute):
            name = category.attr
        # a second positional argument that is not a Warning class is a format argument passed
        # by mistake (3.3's DataParallel: `warnings.warn("... ndim=%d ...", ndim)`)
        found[node.lineno] = name if name.endswith("Warning") else "UserWarning"
    return found


def _kept(found: Found) -> bool:
    if found.file.endswith("_test.py") or "/testing/" in found.file:
        return False
    functions = FUNCTIONS.get(found.file)
    return functions is None or found.function in functions


def extract(checkout: Path, release: str) -> list:
    root = release_root(checkout, release)
    categories: dict[str, dict[int, str]] = {}
    found: list[Found] = []
    for f in scan(root, INCLUDE):
        if not _kept(f):
            continue
        if f.level == "WARNING":
            if f.file not in categories:
                categories[f.file] = _warn_categories(root / f.file)
            category = categories[f.file].get(f.line)
            if category is not None:
                f = Found(f.text, f.style, f.file, f.line, category, f.function)
        found.append(f)
    return to_messages(found, EMITTER, release)
