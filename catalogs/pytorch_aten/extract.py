"""ATen's operator checks: the `TORCH_CHECK` texts of `aten/src/ATen` (shape, size, dimension,
dtype, device, index, layout and argument checks of the native operators, TensorIterator's
broadcasting and type promotion, indexing, the tensor factories), and the dispatch macros'
"not implemented for '<dtype>'".

The checkout is the torch wheel unpacked (`torch/lib/libtorch_cpu.so`, the CPU half of ATen, the
same in the CPU and CUDA builds; `torch/include`). The texts are read from the library's
`.rodata` as in the c10d catalog (see catalogs/sostrings.py): each literal piece of a
`TORCH_CHECK(cond, "split_with_sizes expects split_sizes to sum exactly to ", n, ...)` stream is
one `literal` message, attributed to the nearest translation unit's `__FILE__`. The nearest unit
is looked for among every source root the library embeds (`torch/csrc`, `c10`, `caffe2`,
`third_party`, ATen), so that a piece laid out beside the autograd, JIT or c10d units is theirs,
not ATen's; only the pieces whose nearest unit is under `aten/src/ATen/` are kept, less the mobile
back ends (Vulkan, Metal, NNAPI: stubs in these builds, whose few strings sit beside other units).

Builds that lay strings of 32 bytes and more apart from shorter ones (GCC aligns the longer ones;
2.13's libtorch_cpu.so) keep the short ones away from every `__FILE__`: those are not attributed
and not read. 2.4's build interleaves them, so its line reads them too.

The dispatch text is a macro in a header (`AT_DISPATCH_SWITCH`: `aten/src/ATen/Dispatch.h`, from
2.7 `torch/headeronly/core/Dispatch.h`), its pieces `'"'`, the operator name, `"\\" not implemented
for '"`, the dtype and `"'"`: it is read from the shipped header, as one brace format at level
`DISPATCH`, when the library holds its piece.
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core import Message
from catalogs.sostrings import fragments, is_message, pieces

EMITTER = "pytorch_aten"
LIBRARY = "torch/lib/libtorch_cpu.so"
# Every source root whose files the library embeds as `__FILE__` (the build tree's generated
# ATen sources are under aten/src/ATen as well).
ROOTS = ("aten/src/ATen/", "torch/", "c10/", "caffe2/", "third_party/", "functorch/")
ATEN = "aten/src/ATen/"
SKIP = (
    "aten/src/ATen/vulkan/",
    "aten/src/ATen/metal/",
    "aten/src/ATen/nnapi/",
    "aten/src/ATen/mps/",
)
DISPATCH_HEADERS = (
    "torch/include/torch/headeronly/core/Dispatch.h",
    "torch/include/ATen/Dispatch.h",
)
DISPATCH_PIECE = "\" not implemented for '"
DISPATCH_TEXT = "\"{}\" not implemented for '{}'"
SCHEMA = re.compile(
    r"^[\w.:]+\(.*\) -> |\) -> \(\)$|-> Tensor(?:\(\w!?\))?(?:\[\])?$"
    r"|^\w[\w.]*\((?:Tensor|Scalar|SymInt|int|str)"
)
GENERATED = re.compile(
    r"^aten/src/ATen/(?:Register\w*|Operators_?\w*|CompositeViewCopyKernels|Functions"
    r"|core/TensorMethods|core/ATenOpList|UfuncCPU\w*|ViewMetaClasses\w*)\.cpp$"
)
# a byte of the data laid out before a string, read as its first character
STRAY_LEAD = re.compile(r"^(?:\$?@+|[?=]+|\d(?=[A-Za-z]{3}))")


def _dispatch(checkout: Path, release: str) -> list[Message]:
    if DISPATCH_PIECE not in pieces(checkout / LIBRARY):
        return []
    for header in DISPATCH_HEADERS:
        path = checkout / header
        if not path.is_file():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if '"\\" not implemented for \'"' in line:
                file = header.removeprefix("torch/include/")
                file = file if file.startswith("torch/") else f"aten/src/{file}"
                return [
                    Message(EMITTER, release, DISPATCH_TEXT, "brace", file, number, "DISPATCH", "")
                ]  # type: ignore[arg-type]
    return []


def extract(checkout: Path, release: str) -> list[Message]:
    found: list[Message] = []
    seen: set[str] = set()
    for f in fragments(checkout / LIBRARY, ROOTS):
        if not f.file.startswith(ATEN) or f.file.startswith(SKIP) or SCHEMA.search(f.text):
            continue
        if f.level == "ASSERT" and GENERATED.match(f.file):
            continue
        text = STRAY_LEAD.sub("", f.text) if f.level == "FRAGMENT" else f.text
        if text in seen or (text != f.text and not is_message(text)):
            continue
        seen.add(text)
        found.append(Message(EMITTER, release, text, f.style, f.file, f.line, f.level, ""))  # type: ignore[arg-type]
    return found + _dispatch(checkout, release)
