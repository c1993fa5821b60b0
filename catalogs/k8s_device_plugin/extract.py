"""NVIDIA k8s-device-plugin's failure messages: its klog lines and the errors it returns.

Reads a release tree (the plugin, the MPS control daemon, the resource managers, the config
loader and the vendored go-nvlib device walker; source.yaml `paths`). `klog.Errorf` /
`Warningf` / `Infof` / `Fatalf` (and their print forms `klog.Error(...)`) print at klog's
level (`ERROR`, `WARNING`, `INFO`, `FATAL`: the header's letter); `fmt.Errorf` and `errors.New`
build an error the caller wraps ("error starting plugins: failed to initialize NVML:
ERROR_LIBRARY_NOT_FOUND") until main logs it with `klog.Error(err)`: level `error`.
Go's verbs are written as the C conversion that prints the same shape (catalogs/gosource.py).
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core.message import Message
from catalogs.gosource import find_calls

EMITTER = "k8s_device_plugin"
_KLOG = {
    "Errorf": ("f", "ERROR"),
    "Warningf": ("f", "WARNING"),
    "Infof": ("f", "INFO"),
    "Fatalf": ("f", "FATAL"),
    "Exitf": ("f", "FATAL"),
    "Error": ("print", "ERROR"),
    "Warning": ("print", "WARNING"),
    "Info": ("print", "INFO"),
    "Fatal": ("print", "FATAL"),
    "Exit": ("print", "FATAL"),
    "ErrorS": ("err", "ERROR"),
    "InfoS": ("print", "INFO"),
}
_ERRORS = {"Errorf": ("f", "error"), "New": ("print", "error")}


def extract(checkout: Path, release: str) -> list[Message]:
    found: list[Message] = []
    klog_methods = {k: v[0] for k, v in _KLOG.items()}
    error_methods = {k: v[0] for k, v in _ERRORS.items()}
    for path in sorted(checkout.rglob("*.go")):
        if path.name.endswith("_test.go"):
            continue
        rel = path.relative_to(checkout).as_posix()
        source = path.read_text(encoding="utf-8", errors="replace")
        for call in find_calls(source, klog_methods, re.compile("klog")):
            level = _KLOG[call.method][1]
            if call.method == "InfoS":
                continue  # structured status lines: the key/value pairs carry the news
            found.append(
                Message(EMITTER, release, call.text, "printf", rel, call.line, level, call.function)
            )
        for call in find_calls(source, error_methods, re.compile(r"fmt|errors")):
            if call.name == "fmt.New":
                continue
            if call.name == "errors.Errorf":
                continue
            found.append(
                Message(
                    EMITTER, release, call.text, "printf", rel, call.line, "error", call.function
                )
            )
    return found
