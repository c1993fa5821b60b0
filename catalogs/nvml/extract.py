"""NVML return codes as `nvidia-ml-py` (pynvml) raises them.

pynvml turns each `NVML_ERROR_*` code into an exception class `NVMLError_<CamelName>` (for
`NVML_ERROR_GPU_IS_LOST`: `NVMLError_GpuIsLost`) whose text is the code's string
(`pynvml.NVMLError_GpuIsLost: GPU is lost`). A code with a string in pynvml's own table becomes
`NVMLError_<Name>: <string>`; the others keep the class name alone. The checkout holds `pynvml.py`
from the wheel.
"""

from __future__ import annotations

import ast
import string
from pathlib import Path

from catalogs.core import Message

EMITTER = "nvml"
MODULE = "pynvml.py"


def class_name(code_name: str) -> str:
    """pynvml's own rule (`_extractNVMLErrorsAsClasses`)."""
    words = string.capwords(code_name.replace("NVML_ERROR_", ""), "_")
    return "NVMLError_" + words.replace("_", "")


def _known_strings(tree: ast.Module) -> dict[str, str]:
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "_errcode_to_string" for t in node.targets)
            and isinstance(node.value, ast.Dict)
        ):
            return {
                k.id: v.value
                for k, v in zip(node.value.keys, node.value.values, strict=True)
                if isinstance(k, ast.Name) and isinstance(v, ast.Constant)
            }
    return {}


def extract(checkout: Path, release: str) -> list[Message]:
    tree = ast.parse((checkout / MODULE).read_text(encoding="utf-8"))
    strings = _known_strings(tree)
    found: list[Message] = []
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id.startswith("NVML_ERROR_")
        ):
            name = node.targets[0].id
            cls = class_name(name)
            text = f"{cls}: {strings[name]}" if name in strings else cls
            found.append(
                Message(EMITTER, release, text, "literal", MODULE, node.lineno, "ERROR", name)
            )
    return found
