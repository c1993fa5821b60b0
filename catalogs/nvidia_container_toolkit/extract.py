"""The NVIDIA Container Toolkit's failure messages: the errors the runtime and its hooks return
and the lines their loggers write.

Reads a release tree (source.yaml `paths`), skipping tests, mocks, generated bindings and the
admin commands that do not run when a container starts (nvidia-ctk's commands other than
`hook`, the installer, the docker/containerd/cri-o config writers). `fmt.Errorf` and
`errors.New` build an error its callers wrap ("error modifying OCI spec: failed to inject CDI
devices: unresolvable CDI devices nvidia.com/gpu=all") until the runtime returns it to the
engine: level `error`. The runtime's logger (`r.logger.Errorf`, `m.logger.Warningf`, ...; logrus)
writes at `ERROR` / `WARNING` / `INFO` (Debugf and Tracef lines are left out: they only show
with debug logging and report no failure). The legacy prestart hook (nvidia-container-runtime-hook)
dies through the standard `log.Panicln` / `log.Panicf`: level `hook`, the bare text on the stderr
that runc quotes. Go's verbs are written as the C conversion that prints the same shape
(catalogs/gosource.py).

One message is libnvidia-container's, not the toolkit's: the requirement check that
`nvidia-container-cli` runs for NVIDIA_REQUIRE_* in the legacy hook path. The toolkit's Go
re-implementation (internal/requirements/constraints/binary.go) quotes the C call it mirrors in a
comment (`// error_setx(err, "unsatisfied condition: %s, please update your driver ...",
predicate_format);`); that quoted format is read as level `nvidia-container-cli`, since
libnvidia-container's own source is not in this checkout (its repository is too large to mirror).
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core.message import Message
from catalogs.gosource import find_calls

EMITTER = "nvidia_container_toolkit"
_SKIP = re.compile(
    r"(?:^|/)(?:test|testing|mock|gen)/|_mock\.go$|zz_generated"
    r"|^cmd/nvidia-ctk/(?!hook/)|^cmd/nvidia-ctk-installer/|^pkg/config/engine/|^tests/"
)
_LOGGER = {
    "Errorf": ("f", "ERROR"),
    "Warningf": ("f", "WARNING"),
    "Warnf": ("f", "WARNING"),
    "Infof": ("f", "INFO"),
    "Error": ("print", "ERROR"),
    "Warning": ("print", "WARNING"),
    "Warn": ("print", "WARNING"),
    "Info": ("print", "INFO"),
}
_LOGGER_RECEIVER = re.compile(r"(?:\w+\.)*logger|l|logrus")
_HOOK = {"Panicln": "ln", "Panicf": "f", "Panic": "print", "Fatalln": "ln", "Fatalf": "f"}
_ERRORS = {"Errorf": "f", "New": "print"}
_QUOTED_C = re.compile(r'//\s*error_setx?\(err, "((?:[^"\\]|\\.)*)"')


def extract(checkout: Path, release: str) -> list[Message]:
    found: list[Message] = []
    logger_methods = {k: v[0] for k, v in _LOGGER.items()}
    for path in sorted(checkout.rglob("*.go")):
        rel = path.relative_to(checkout).as_posix()
        if path.name.endswith("_test.go") or _SKIP.search(rel):
            continue
        source = path.read_text(encoding="utf-8", errors="replace")

        def add(text: str, line: int, level: str, function: str, rel: str = rel) -> None:
            found.append(Message(EMITTER, release, text, "printf", rel, line, level, function))

        for call in find_calls(source, logger_methods, _LOGGER_RECEIVER):
            add(call.text, call.line, _LOGGER[call.method][1], call.function)
        for call in find_calls(source, _HOOK, re.compile("log")):
            add(call.text, call.line, "hook", call.function)
        for call in find_calls(source, _ERRORS, re.compile(r"fmt|errors")):
            if call.name in ("fmt.New", "errors.Errorf"):
                continue
            add(call.text, call.line, "error", call.function)
        for m in _QUOTED_C.finditer(source):
            line = source.count("\n", 0, m.start()) + 1
            add(m.group(1), line, "nvidia-container-cli", "error_setx")
    return found
