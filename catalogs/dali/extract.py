"""NVIDIA DALI's failure messages, from a pinned release's wheel (see source.yaml).

The checkout is the `nvidia-dali-cuda120` wheel unpacked, one directory per release line.

- Python (`ast`, catalogs/python_messages.py): the pipeline (`nvidia/dali/pipeline.py`), the
  external source and its parallel workers (`external_source.py`, `_multiproc/`), the backend
  loader and the framework iterators (`plugin/base_iterator.py`, `plugin/pytorch`, `plugin/jax`)
  that data-parallel training drives. Out of scope: the operator wrappers' argument checks
  (`ops/`, `fn/`), AutoGraph, auto-augment and the experimental and debug front ends.
- C++ (catalogs/sostrings.py's `.rodata` reader, with line breaks): every `DALI_ENFORCE` and
  `DALI_FAIL` prefixes its text with the constant `"[<build root>/dali/<file>:<line>] "`, which
  the linker lays right after the check's own literals (its message, the pieces of a
  `make_string(...)`, the stringized condition). A message-like text is attributed to the check
  whose `[file:line]` follows it within a few pieces (only the check's literals between), and
  kept when that file is in SCOPE: the executor and pipeline, the readers and their loaders
  (files, shards, indices), the decoders, the external source, the Python binding, DALI's CUDA
  and file utilities. Operator schema documentation (paragraphs of reST, never followed by a
  check) and the stringized conditions (code, not prose) are left out. The executor's reports
  and DALI's allocator errors are not checks (no `[file:line]` beside them): KNOWN lists them,
  each with its source file in NVIDIA/DALI. A multi-line text keeps its first line.
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core import Message
from catalogs.python_messages import extract_python
from catalogs.sostrings import is_message, pieces

EMITTER = "dali"
INCLUDE = (
    "nvidia/dali/pipeline.py",
    "nvidia/dali/external_source.py",
    "nvidia/dali/backend.py",
    "nvidia/dali/_multiproc/",
    "nvidia/dali/plugin/base_iterator.py",
    "nvidia/dali/plugin/pytorch",
    "nvidia/dali/plugin/jax/",
)
EXCLUDE = ("nvidia/dali/plugin/pytorch/experimental/",)
LIBRARIES = (
    "nvidia/dali/libdali.so",
    "nvidia/dali/libdali_operators.so",
    "nvidia/dali/libdali_imgcodec.so",  # 1.x: the image codecs (2.x links them into operators)
    "nvidia/dali/backend_impl.cpython-311-x86_64-linux-gnu.so",
)
# a check's location prefix, as the build embeds it (`/opt/dali/` is the wheels' build root)
_MARK = re.compile(r"^\[/[\w./+-]*?/(dali/(?!dali/)[\w./+-]+\.(?:cc|cu|h|cuh|inl|cpp)):(\d+)\] $")
# the source files whose checks a distributed training run meets: executor and pipeline,
# readers and loaders, decoders, the external source, the Python binding, CUDA and file I/O
SCOPE = re.compile(
    r"^dali/(?:"
    r"pipeline/(?!data/)"
    r"|operators/(?:reader|decoder|imgcodec|input)/"
    r"|imgcodec/"
    r"|python/"
    r"|c_api/"
    r"|core/"
    r"|util/(?:std_file|mmaped_file|odirect_file|std_cufile|cufile|file|s3|uri|nvml|numpy)"
    r")"
)
# reports that are not checks, with their source in NVIDIA/DALI (CUDABadAlloc in
# include/dali/core/cuda_error.h, the executors' error propagation, pipeline.cc):
# (regex on the piece, text, source file by major version)
EXEC1 = "dali/pipeline/executor/executor.h"
EXEC2 = "dali/pipeline/executor/executor2/op_task.cc"
CUDA_ERROR = "include/dali/core/cuda_error.h"
KNOWN: tuple[tuple[str, str, dict[str, str]], ...] = (
    (
        r"Critical error in pipeline:",
        "Critical error in pipeline:",
        {"1": EXEC1, "2": EXEC2},
    ),
    (
        r"^Critical error when building pipeline:",
        "Critical error when building pipeline:",
        {"1": "dali/pipeline/pipeline.cc", "2": "dali/pipeline/executor/executor2/exec_graph.cc"},
    ),
    (
        r"Current pipeline object is no longer valid\.",
        "Current pipeline object is no longer valid.",
        {"1": EXEC1, "2": EXEC2},
    ),
    (
        r"^Unknown critical error in pipeline\.",
        "Unknown critical error in pipeline.",
        {"1": "dali/pipeline/pipeline.cc", "2": "dali/pipeline/pipeline.cc"},
    ),
    (r"^CUDA allocation failed$", "CUDA allocation failed", {"*": CUDA_ERROR}),
    (
        r"^Error in worker thread: $",
        "Error in worker thread: ",
        {"2": "dali/core/exec/thread_pool_base.cc"},
    ),
)
_WORDS = re.compile(r"[A-Za-z]{2,}[,:;.]? [A-Za-z]{2,}")  # two words in a row: prose, not code
# the C++ standard library's own texts, compiled into the same units
FOREIGN = re.compile(r"^basic_string|^vector::|std::vector|^%s: __pos|^cannot create std::")
# an operator schema's argument documentation that happens to lie right before a check
DOC = re.compile(
    r":(?:meth|mod|class|ref|func|paramref):`|"
    r"^(?:If (?:set|specified|provided|True|False)|Legacy alias|Determines |Specifies |When set|"
    r"Denotes |Returns |List of |Path to |Data type,|True for |"
    r"This operator was moved|Index of |Number of |Name of |Size of |Type of |Whether )"
)
# a condition a check stringizes (`mdb_cursor_get(...) == 0`), not prose
CODE = re.compile(r"==|!=|&&|\|\||->|<=|>=|\w\([^()]*\)\s*$|^[!\w.]+\(")
_LONG = 600  # longer texts are documentation or several strings merged
_LOOKAHEAD = 2  # pieces a check's text may lie before its `[file:line]`
_PRINTF = re.compile(r"%[-+ #0]*\d*(?:\.\d+)?(?:hh|h|ll|l|L|z|j|t)?[diouxXeEfFgGcsp]")


def _is_text(text: str) -> bool:
    return (
        len(text) <= _LONG
        and "\n\n" not in text.strip("\n")  # reST documentation of an operator's schema
        and is_message(text)
        and _WORDS.search(text) is not None
        and not _MARK.match(text)
        and not FOREIGN.search(text)
        and not DOC.search(text)
        and not CODE.search(text)
    )


def _statement(text: str) -> str:
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    return lines[0] if lines else text.strip()


def _checks(texts: list[str]) -> list[tuple[str, int, str]]:
    """(file, line, text) of every message-like text that a check's `[file:line]` follows."""
    found: list[tuple[str, int, str]] = []
    for i, text in enumerate(texts):
        if not _is_text(text):
            continue
        for j in range(i + 1, min(i + 1 + _LOOKAHEAD, len(texts))):
            mark = _MARK.match(texts[j])
            if mark:
                found.append((mark[1], int(mark[2]), text))
                break
            if len(texts[j]) > _LONG or "\n\n" in texts[j]:
                break  # documentation between: not this check's literals
    return found


def _known(texts: list[str], release: str) -> list[tuple[str, int, str]]:
    family = release.split(".")[0]
    found = []
    for rx, text, files in KNOWN:
        file = files.get(family) or files.get("*")
        if file and any(re.search(rx, t) for t in texts):
            found.append((file, 1, text))
    return found


def library_messages(checkout: Path, release: str) -> list[Message]:
    found: dict[str, Message] = {}
    for library in LIBRARIES:
        lib = checkout / library
        if not lib.is_file():
            continue  # a library this release does not ship
        texts = pieces(lib, newlines=True)
        for file, line, whole in _known(texts, release) + _checks(texts):
            text = _statement(whole)
            if text in found or not (SCOPE.match(file) or file.startswith("include/dali/")):
                continue
            if not _is_text(text) and not any(text == k[1] for k in KNOWN):
                continue
            style = "printf" if _PRINTF.search(text) else "literal"
            level = "REPORT" if line == 1 else "FRAGMENT"  # a KNOWN report, not a check
            found[text] = Message(EMITTER, release, text, style, file, line, level, "")
    return sorted(found.values(), key=lambda m: (m.file, m.line, m.text))


def extract(checkout: Path, release: str) -> list[Message]:
    python = extract_python(checkout, release, EMITTER, INCLUDE, EXCLUDE)
    return python + library_messages(checkout, release)
