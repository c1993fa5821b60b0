"""NVML return codes as `nvidia-ml-py` (pynvml) raises them.

pynvml turns each `NVML_ERROR_*` code into an exception class `NVMLError_<CamelName>` (for
`NVML_ERROR_GPU_IS_LOST`: `NVMLError_GpuIsLost`) whose text is the code's string
(`pynvml.NVMLError_GpuIsLost: GPU is lost`). A code with a string in pynvml's own table becomes
`NVMLError_<Name>: <string>`; the others keep the class name alone. The checkout holds `pynvml.py`
from the wheel.

The strings `nvmlErrorString()` returns are read too, since every other program quotes them in
its own wrapper: nvidia-smi's "Failed to initialize NVML: <string>", Go programs through
go-nvml (k8s-device-plugin's "failed to initialize NVML: <string>"), DCGM's "Error calling NVML
API %s: %s", and libnvidia-container, which lowercases its whole message
("nvidia-container-cli: initialization error: nvml error: driver/library version mismatch").
libnvidia-ml is closed source; its table is read from the copy NVIDIA ships in DCGM
(`sdk/nvidia/nvml/nvml_error_strings.h`, `errorString()`: `case NVML_ERROR_X: return "...";`),
copied into the checkout as `reference/nvml_error_strings.h`. Each string is one message at
level `nvmlErrorString` and, lowercased as libnvidia-container prints it, one at level
`nvml_error_lowercase`; source.yaml anchors the short ones after the wrappers' "NVML: " /
"nvml error: ".
"""

from __future__ import annotations

import ast
import re
import string
from pathlib import Path

from catalogs.core import Message

EMITTER = "nvml"
MODULE = "pynvml.py"
STRINGS = "reference/nvml_error_strings.h"
_CASE = re.compile(r'case (NVML_ERROR_\w+):\s*return "((?:[^"\\]|\\.)*)";')


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
    table = checkout / STRINGS
    if table.is_file():
        text = table.read_text(encoding="utf-8")
        for m in _CASE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            name, printed = m.group(1), m.group(2)
            for level, wording in (
                ("nvmlErrorString", printed),
                ("nvml_error_lowercase", printed.lower()),
            ):
                found.append(
                    Message(EMITTER, release, wording, "literal", STRINGS, line, level, name)
                )
    return found
