"""PaddlePaddle's distributed-training and device failure messages, from a pinned release's wheel.

The checkout is the `paddlepaddle-gpu` (2.6) or `paddlepaddle` (3.3, CPU: PyPI has no 3.x GPU
wheel) wheel unpacked (see source.yaml).

- Python (`ast`, catalogs/python_messages.py): `paddle.distributed` (the launchers, fleet and its
  hybrid-parallel runtime, the collective and communication APIs, spawn, distributed
  checkpoints, the dynamic semi-automatic parallel API), `paddle.io` (DataLoader and its
  workers), `paddle.device`, `paddle.save` / `paddle.load` (`paddle/framework/io.py`), the
  import of the native core (`paddle/base/core.py`), the legacy reader's worker monitor and
  `paddle.utils.run_check`. Out of scope: the static auto-parallel compiler and the program
  passes (internal checks of a graph rewrite), the parameter-server stack (`ps`, `transpiler`,
  fleet's PS runtime, data generators) and the auto-tuner.
- C++ (catalogs/sostrings.py's `.rodata` reader, with line breaks): `PADDLE_ENFORCE_*` texts
  are printf formats kept whole in `libpaddle.so` / `libphi*.so` (`"\\n\\nOut of memory error on
  GPU %d. Cannot allocate %s memory ..."`), and `LOG(...) << ...` streams keep each literal
  piece. Every check also embeds its `__FILE__` (`/paddle/paddle/phi/...`), and the linker lays
  a translation unit's strings out together: the unit's path follows its first check's text,
  and the unit's other texts lie around its path. A text is attributed to the path that
  follows it when only hints and code expressions lie between them (the unit's first check),
  else to the nearer of the paths before and after it (as PyTorch's catalogs attribute a
  piece), which can name a neighbouring unit: the file is a pointer, confirmed in the upstream
  source only for the texts in CXX_SOURCES. A text is kept when that source file is in SCOPE
  (collective process groups, communication contexts, the TCP store, allocators, device and
  library loading, the DataLoader's worker monitor, enforce itself); the operators' own
  argument checks, the IR and the generated API stay out, and so do the C++ standard library's
  texts compiled into the same units (std::regex's errors) and code expressions a check
  stringizes. The error type Paddle prints before a text (`(ResourceExhausted)`, `(External)`)
  is an argument of the check, not part of the string.
"""

from __future__ import annotations

import bisect
import re
from pathlib import Path

from catalogs.core import Message
from catalogs.python_messages import extract_python
from catalogs.sostrings import is_message, pieces

EMITTER = "paddle"
INCLUDE = (
    "paddle/distributed/",
    "paddle/io/",
    "paddle/device/",
    "paddle/framework/io.py",
    "paddle/base/core.py",
    "paddle/base/reader.py",
    "paddle/base/multiprocess_utils.py",
    "paddle/utils/install_check.py",
)
EXCLUDE = (
    "paddle/distributed/auto_parallel/static/",
    "paddle/distributed/passes/",
    "paddle/distributed/auto_tuner/",
    "paddle/distributed/ps/",
    "paddle/distributed/transpiler/",
    "paddle/distributed/fleet/runtime/",
    "paddle/distributed/fleet/data_generator/",
    "paddle/distributed/fleet/base/util_factory.py",
)
# `assert cond, "..."` is a user-facing check only in the launchers and the parallel set-up
# (arguments, topology, strategy); elsewhere an assert is an internal invariant.
ASSERT_PATHS = (
    "paddle/distributed/launch/",
    "paddle/distributed/fleet/launch.py",
    "paddle/distributed/fleet/launch_utils.py",
    "paddle/distributed/parallel.py",
    "paddle/distributed/spawn.py",
    "paddle/distributed/fleet/base/topology.py",
    "paddle/distributed/fleet/base/distributed_strategy.py",
)
# 2.6 ships libpaddle.so and libphi.so; 3.x moved phi's core into libphi_core.so and the flags
# into libcommon.so (its libphi.so is a stub).
LIBRARIES = (
    "paddle/base/libpaddle.so",
    "paddle/libs/libphi.so",
    "paddle/libs/libphi_core.so",
    "paddle/libs/libcommon.so",
)
# Source files (repository paths) whose texts are kept: the runtime a distributed or GPU run goes
# through, not the operators' argument checks.
SCOPE = re.compile(
    r"^paddle/(?:"
    r"fluid/distributed/collective/"
    r"|phi/core/distributed/(?!auto_parallel/)"
    r"|fluid/memory/|phi/core/memory/"
    r"|fluid/platform/(?:collective_helper|gen_comm_id_helper|init|device/gpu/|dynload/"
    r"dynamic_loader|device_context|enforce)"
    r"|phi/core/platform/(?:collective_helper|gen_comm_id_helper|device/gpu/|device_context)"
    r"|phi/backends/(?:gpu/|dynload/dynamic_loader|dynload/port|device_manager)"
    r"|phi/core/enforce|common/enforce"
    r"|fluid/imperative/(?:data_loader|(?:nccl|gloo|bkcl|xccl|heter_ccl)_context|reducer)"
    r"|fluid/framework/fleet/(?:gloo_wrapper|nccl_wrapper)"
    r")"
)
# Source files of texts the layout attributes to a neighbouring unit, confirmed by the
# "(at /paddle/paddle/<file>:<line>)" Paddle prints after them in real logs
# (PaddlePaddle/PaddleDetection#7252, PaddlePaddle/Paddle#43197); the first match wins.
CXX_SOURCES: tuple[tuple[str, str], ...] = (
    (r"^DataLoader process \(pid %ld\) exited", "paddle/fluid/imperative/data_loader.cc"),
    (
        r"^The third-party dynamic library \(%s\) that Paddle depends on",
        "paddle/phi/backends/dynload/dynamic_loader.cc",
    ),
)
# The build root of the wheels' libraries: the `__FILE__` of Paddle's own sources, of generated
# files and of the third parties linked beside them.
_PATH = re.compile(r"^/paddle/((?:paddle|build|third_party)/[\w./+-]+\.(?:cc|cu|cpp|c|h|hpp))$")
_HINT = re.compile(r"^\s*\[Hint: ")
_WORDS = re.compile(r"[A-Za-z]{2,}[,:;]? [A-Za-z]{2,}")  # two words in a row: prose, not code
# libstdc++'s std::regex errors (compiled into the units that use it) and strings the linker
# merged into one (a build path inside a text)
FOREIGN = re.compile(
    r"expression\.$|^Unexpected (?:end of (?:regex|character class)|character|dash|"
    r"back-reference|escape|token)|"
    r"^Invalid (?:range|special open|character class|collate|equivalence)|^Nothing to repeat|"
    r"^Number of NFA states|^Parenthesis is not closed|^Character is expected after|"
    r"/paddle/paddle/"
)
_LONG = 2000  # a "text" longer than this is several strings merged, not one message
_PRINTF = re.compile(r"%[-+ #0]*\d*(?:\.\d+)?(?:hh|h|ll|l|L|z|j|t)?[diouxXeEfFgGcsp]")


def _is_text(text: str) -> bool:
    """A message-like string: not a symbol, a path, a code expression a check stringizes
    (`comm_map_.count(ring_id)`), nor one of the C++ standard library's own texts."""
    return (
        len(text) <= _LONG
        and is_message(text)
        and _WORDS.search(text) is not None
        and not _PATH.match(text)
        and not FOREIGN.search(text)
    )


def _statement(text: str) -> str:
    """A check's statement: the first line of a multi-line text. Paddle states the error on
    it and follows with advice several errors share ("Please check whether there is any other
    process using GPU %d.", "Suggestions:", numbered hints), which names no cause by itself."""
    lines = [line for line in text.split("\n") if line.strip()]
    return lines[0].strip() if len(lines) > 1 else text


def _attributed(texts: list[str]) -> list[tuple[str, str]]:
    """(source path, text) of every message-like text that lies in a translation unit."""
    paths = [(i, m[1]) for i, t in enumerate(texts) if (m := _PATH.match(t))]
    at = [i for i, _ in paths]
    found: list[tuple[str, str]] = []
    for i, text in enumerate(texts):
        if not _is_text(text):
            continue
        k = bisect.bisect_right(at, i)  # paths[k] is the first path after the text
        before = paths[k - 1] if k > 0 else None
        after = paths[k] if k < len(paths) else None
        if after is not None and all(
            not is_message(t) or _HINT.match(t) for t in texts[i + 1 : after[0]]
        ):
            found.append((after[1], text))  # the unit's first check: its path follows it
        elif before is not None and (after is None or i - before[0] <= after[0] - i):
            found.append((before[1], text))
        elif after is not None:
            found.append((after[1], text))
    return found


def library_messages(checkout: Path, release: str) -> list[Message]:
    found: dict[str, Message] = {}
    for library in LIBRARIES:
        lib = checkout / library
        if not lib.is_file() or lib.stat().st_size < 1 << 20:  # absent, or 3.x's libphi.so stub
            continue
        for nearby, whole in _attributed(pieces(lib, newlines=True)):
            text = _statement(whole)
            file = next((src for rx, src in CXX_SOURCES if re.search(rx, text)), nearby)
            if text in found or not SCOPE.match(file):
                continue
            style = "printf" if _PRINTF.search(text) else "literal"
            found[text] = Message(EMITTER, release, text, style, file, 1, "FRAGMENT", "")
    return sorted(found.values(), key=lambda m: (m.file, m.text))


def extract(checkout: Path, release: str) -> list[Message]:
    python = extract_python(checkout, release, EMITTER, INCLUDE, EXCLUDE, ASSERT_PATHS)
    return python + library_messages(checkout, release)
