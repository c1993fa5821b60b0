"""PEFT's failure messages, from the source of a pinned release (see source.yaml).

Scope: the `peft` package: configuration (PeftConfig and every tuner's config), PeftModel's
creation, loading and saving, the tuners' layer injection (target modules), merge and unload,
the quantized-base layers (bitsandbytes, GPTQ, AWQ, HQQ, torchao), and the utilities they share.

The adapter file names (`CONFIG_NAME` = adapter_config.json, ...) are module constants that the
loading errors interpolate (`f"Can't find '{CONFIG_NAME}' at '{model_id}'"`); they print the same
in every run, so they are put back as literal text: with the placeholder left in, the message is
too generic to match, with the name in it, it is PEFT's alone.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

from catalogs.python_messages import extract_python, release_root

INCLUDE = ("src/peft/",)
# the test helpers a user's run never reaches
EXCLUDE = ("src/peft/utils/testing_utils.py", "src/peft/testing_utils.py")
# `assert cond, "..."` is a user-facing check only in the configuration and model-creation files;
# elsewhere an assert is an internal invariant unless it states a requirement (python_messages).
ASSERT_PATHS = ("src/peft/config.py", "src/peft/peft_model.py", "src/peft/mapping.py")
CONSTANTS = "src/peft/utils/constants.py"
# the file-name constants the loading errors print; other constants are not message text
FILE_NAMES = ("CONFIG_NAME", "WEIGHTS_NAME", "SAFETENSORS_WEIGHTS_NAME")


def file_names(root: Path) -> dict[str, str]:
    """`{"{CONFIG_NAME}": "adapter_config.json", ...}` as this release's constants set them."""
    path = root / CONSTANTS
    if not path.is_file():
        return {}
    names: dict[str, str] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id in FILE_NAMES
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            names["{" + node.targets[0].id + "}"] = node.value.value
    return names


def extract(checkout: Path, release: str) -> list:
    found = extract_python(checkout, release, "peft", INCLUDE, EXCLUDE, ASSERT_PATHS)
    names = file_names(release_root(checkout, release))
    out = []
    for message in found:
        text = message.text
        for placeholder, value in names.items():
            text = text.replace(placeholder, value)
        out.append(message if text == message.text else replace(message, text=text))
    return out
