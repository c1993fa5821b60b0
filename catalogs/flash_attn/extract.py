"""FlashAttention's (github.com/Dao-AILab/flash-attention) failure messages, from the source of a
pinned release (see source.yaml).

The CUDA extension (`csrc/flash_attn/flash_api.cpp`, the ROCm build's `csrc/flash_attn_ck` and,
where the release has it, FlashAttention-3's `hopper/flash_api.cpp`) checks its arguments with
PyTorch's `TORCH_CHECK(cond, ...)`, which a Python caller sees as `RuntimeError: <text>` (level
RuntimeError; streamed pieces that are not literals are `{}`, style `brace`). Its own shorthands
are expanded as the preprocessor prints them: `CHECK_SHAPE(x, a, b)` is "x must have shape
(a, b)", `CHECK_DEVICE(x)` "x must be on CUDA", `CHECK_CONTIGUOUS(x)` "x must be contiguous".

The Python package (`flash_attn`, and FlashAttention-3's `hopper/flash_attn_interface.py`) is read
with `ast`: raises, warnings, logger calls; `assert cond, "..."` counts in the interfaces users
call (flash_attn_interface.py, the Triton and block-sparse interfaces) and the modules (MHA).
The bundled model definitions, benchmarks and tests are left out. Nothing here decides a class:
mapping.yaml does.
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core.message import Message
from catalogs.cppsource import _args, _blank_comments, _enclosing_function
from catalogs.cppstreams import _message, _piece
from catalogs.python_messages import extract_python

EMITTER = "flash_attn"
CPP_FILES = ("csrc/flash_attn/flash_api.cpp", "hopper/flash_api.cpp")
CPP_DIRS = ("csrc/flash_attn_ck",)
CPP_SUFFIXES = {".cpp", ".hpp", ".h", ".cu"}
# the shorthand -> the text it prints around its stringized arguments
SHORTHANDS = {
    "CHECK_SHAPE": "{x} must have shape ({rest})",
    "CHECK_DEVICE": "{x} must be on CUDA",
    "CHECK_CONTIGUOUS": "{x} must be contiguous",
}
_DEFINE = re.compile(r"#\s*define\s+$")

PY_INCLUDE = ("flash_attn/", "hopper/flash_attn_interface.py")
PY_EXCLUDE = (
    "flash_attn/models/",
    "flash_attn/utils/benchmark.py",
    "flash_attn/utils/pretrained.py",
    "flash_attn/flash_attn_triton_og.py",
    "flash_attn/flash_attn_triton_amd/test",
    "flash_attn/flash_attn_triton_amd/bench",
    "flash_attn/flash_attn_triton_amd/fp8.py",
)
ASSERT_PATHS = (
    "flash_attn/flash_attn_interface.py",
    "flash_attn/flash_attn_triton.py",
    "flash_attn/flash_blocksparse_attn_interface.py",
    "flash_attn/modules/mha.py",
    "flash_attn/cute/interface.py",
    "hopper/flash_attn_interface.py",
)


def _stringized(arg: str) -> str:
    return " ".join(arg.split())


def _shorthands(src: str, rel: str, release: str) -> list[Message]:
    clean = _blank_comments(src)
    found: list[Message] = []
    names = "|".join(SHORTHANDS)
    for m in re.finditer(rf"\b({names})\s*\(", clean):
        if _DEFINE.search(clean[max(0, m.start() - 20) : m.start()]):
            continue  # the shorthand's own definition
        parsed = _args(clean, m.end() - 1)
        if parsed is None or not parsed[0] or not parsed[0][0]:
            continue
        args = [_stringized(a) for a in parsed[0]]
        text = SHORTHANDS[m.group(1)].format(x=args[0], rest=", ".join(args[1:]))
        line = clean.count("\n", 0, m.start()) + 1
        function = _enclosing_function(clean, m.start())
        found.append(
            Message(EMITTER, release, text, "literal", rel, line, "RuntimeError", function)
        )
    return found


def _cpp_files(checkout: Path) -> list[tuple[Path, str]]:
    files = [(checkout / rel, rel) for rel in CPP_FILES if (checkout / rel).is_file()]
    for folder in CPP_DIRS:
        for path in sorted((checkout / folder).rglob("*")):
            if path.suffix in CPP_SUFFIXES and path.is_file():
                files.append((path, path.relative_to(checkout).as_posix()))
    return files


def _checks(src: str, rel: str, release: str) -> list[Message]:
    clean = _blank_comments(src)
    found: list[Message] = []
    for m in re.finditer(r"\bTORCH_CHECK\s*\(", clean):
        if (
            _DEFINE.search(clean[max(0, m.start() - 40) : m.start()])
            or "#define" in (clean[clean.rfind("\n", 0, m.start()) + 1 : m.start()])
        ):
            continue  # inside a shorthand's definition, expanded by _shorthands
        parsed = _args(clean, m.end() - 1)
        if parsed is None:
            continue
        message = _message([_piece(a) for a in parsed[0][1:] if a])
        if message is None:
            continue
        line = clean.count("\n", 0, m.start()) + 1
        function = _enclosing_function(clean, m.start())
        text, style = message
        found.append(Message(EMITTER, release, text, style, rel, line, "RuntimeError", function))  # type: ignore[arg-type]
    return found


def extract(checkout: Path, release: str) -> list[Message]:
    found: list[Message] = []
    for path, rel in _cpp_files(checkout):
        src = path.read_text(encoding="utf-8", errors="replace")
        found += _checks(src, rel, release)
        found += _shorthands(src, rel, release)
    found += extract_python(checkout, release, EMITTER, PY_INCLUDE, PY_EXCLUDE, ASSERT_PATHS)
    return found
