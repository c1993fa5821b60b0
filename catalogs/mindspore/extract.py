"""MindSpore's failure messages on Ascend, from the `mindspore` wheel of a pinned release.

The checkout holds one folder per release line, each the wheel unpacked (see source.yaml).

- Python, read with `ast` (raises, warnings, `logger.*` calls of `mindspore.log`):
  `mindspore/communication` (init, HCCL groups), `mindspore/parallel` (auto/semi-auto parallel,
  strategy and checkpoint transformation, the distributed launcher `msrun`), `mindspore/train`
  (Model, callbacks, checkpoint save/load, the fault-tolerance hooks) and the dataset pipeline's
  engine (`mindspore/dataset/engine`: datasets, iterators, the worker processes and shared memory
  queues; its argument validators are left out, as are the transforms).
- C++, read from the shipped libraries' `.rodata` (catalogs/sostrings.py): each literal piece of
  an `MS_LOG(ERROR) << ...` / `MS_LOG(EXCEPTION) << ...` stream, attributed to the nearest
  translation unit, kept for the units of the Ascend resource manager (streams, memory, events,
  HCCL/LCCL collective adapters), the device-independent collective and memory managers and the
  cluster's process-group and RPC layer (`msrun`'s scheduler). MindSpore's operators and graph
  passes are left out.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.core import Message
from catalogs.python_messages import extract_python, release_root
from catalogs.sostrings import library_messages

EMITTER = "mindspore"
INCLUDE = (
    "mindspore/communication/",
    "mindspore/parallel/",
    "mindspore/train/",
    "mindspore/dataset/engine/",
)
EXCLUDE = ("mindspore/dataset/engine/validators.py",)
LIBRARIES = (
    "mindspore/lib/plugin/ascend/libmindspore_ascend_res_manager.so",
    "mindspore/lib/plugin/ascend/libd_collective.so",
    "mindspore/lib/plugin/ascend/liblowlatency_collective.so",
    "mindspore/lib/libmindspore_hardware_abstract.so",
    "mindspore/lib/libmindspore_cluster.so",
)
CXX_PREFIXES = (
    "mindspore/ccsrc/plugin/ascend/res_manager/",
    "mindspore/ccsrc/plugin/device/ascend/hal/",
    "mindspore/ccsrc/runtime/hardware_abstract/collective/",
    "mindspore/ccsrc/runtime/hardware_abstract/memory_manager/",
    "mindspore/ccsrc/runtime/hardware_abstract/device_context/",
    "mindspore/ccsrc/cluster/",
    "mindspore/ccsrc/distributed/",
)
CXX_SKIP = ("mindspore/ccsrc/plugin/ascend/res_manager/op_adapter/",)


def extract(checkout: Path, release: str) -> list[Message]:
    root = release_root(checkout, release)
    found = extract_python(checkout, release, EMITTER, INCLUDE, EXCLUDE)
    cxx = library_messages(root, EMITTER, release, LIBRARIES, CXX_PREFIXES, CXX_SKIP)
    return found + cxx
