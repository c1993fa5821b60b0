"""TensorFlow's distributed-training failure messages, from a pinned release's wheel.

The checkout is the `tensorflow` wheel from PyPI unpacked (see source.yaml).

- Python (`ast`, catalogs/python_messages.py): tf.distribute (the strategies, cross-device ops,
  the cluster resolvers, multi_worker_util, the parameter-server coordinator, failure handling),
  the legacy `tensorflow/python/keras/distribute` helpers the wheel still ships, and the TPU
  runtime files a TPUStrategy run goes through (system initialisation, topology, the TPU client,
  the preemption hook). The test harness (combinations, multi_process_runner, ...) and the TPU
  embedding, feature-column and tensor-tracer APIs are out of scope.
- C++ (catalogs/sostrings.py's `.rodata` reader): the collective runtime, the distributed
  runtime (gRPC worker/master, eager remote contexts), the coordination service and its agent,
  the preemption notifier and the NCCL manager are compiled into `libtensorflow_framework.so.2`
  and `libtensorflow_cc.so.2`. Each literal piece of an `errors::Internal("...", x, "...")` /
  `absl::StrCat` / `LOG(ERROR) << ...` survives as its own string. TensorFlow's linker merges
  the strings of all translation units, so, unlike PyTorch's libraries, the nearest `__FILE__`
  does not name a piece's source: a piece is kept when it speaks of the distributed runtime
  (TOPIC) and is not a third party's compiled into the same library (gRPC core, XLA, NCCL, the
  Unicode tables); its file is the source file confirmed in tensorflow/tensorflow for the texts
  in CXX_SOURCES (as the library's own `__FILE__` string spells it), else the library that ships it.
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core import Message
from catalogs.python_messages import extract_python
from catalogs.sostrings import is_message, pieces

EMITTER = "tensorflow"
INCLUDE = (
    "tensorflow/python/distribute/",
    "tensorflow/python/keras/distribute/",
    "tensorflow/python/tpu/client/",
    "tensorflow/python/tpu/preempted_hook.py",
    "tensorflow/python/tpu/tpu_strategy_util.py",
    "tensorflow/python/tpu/tpu_system_metadata.py",
    "tensorflow/python/tpu/topology.py",
    "tensorflow/python/tpu/device_assignment.py",
)
# the test harness tf.distribute ships for its own tests
EXCLUDE = (
    "tensorflow/python/distribute/combinations.py",
    "tensorflow/python/distribute/strategy_combinations.py",
    "tensorflow/python/distribute/multi_process_runner.py",
    "tensorflow/python/distribute/multi_process_lib.py",
    "tensorflow/python/distribute/multi_worker_test_base.py",
    "tensorflow/python/distribute/coordinator/fault_tolerance_test_base.py",
    "tensorflow/python/distribute/integration_test/",
)
LIBRARIES = ("tensorflow/libtensorflow_framework.so.2", "tensorflow/libtensorflow_cc.so.2")

# A piece that speaks of the distributed runtime.
TOPIC = re.compile(
    r"(?i)collective|group[_ ]key|instance[_ ]key|coordination[_ ]service|heartbeat|incarnation"
    r"|barrier|preempt|/job:|\bworker|\btask\b|\btasks\b|\bNCCL\b|rendezvous|all addresses"
    r"|cluster ?spec|ClusterDef|server_def|remote (?:device|task|worker|host)"
)
# Pieces of the third parties linked into the same libraries: gRPC core, XLA/HLO and its
# compiler passes, DTensor and MLIR, NCCL's own printf texts (the `nccl` emitter's), TPU
# embedding, tf.data service, and Unicode tables merged into one string.
FOREIGN = re.compile(
    r"grpc_|chttp2|subchannel|\bxds\b|iomgr|\bLB policy|lb_policy|resolver|\bALTS\b|tsi_|"
    r"\bHLO\b|\bhlo\b|\bxla\b|\bXLA\b|collective-permute|all-reduce-start|all-gather-start|"
    r"\bmlir\b|MLIR|DTensor|dtensor|\bmesh\b|Mesh\b|%[-+ #0-9.]*[lhz]*[diuxXsfgpc]|"
    r"tf\.data|data service|dispatcher|snapshot|TPUEmbedding|tpu_embedding|SparseCore|"
    r"cluster (?:compil|with device|names)|clusters?\b.{0,20}\b(?:op|ops|node)\b|--tf_xla|"
    r"tf2xla|IFRT|ifrt|PjRt|pjrt|StreamExecutor|NVSHMEM|Nvshmem|[Cc]lique|[Tt]hunk|Cmd\b|"
    r"Shardy|degenerate|pipelin|source-target|[Cc]ollective permute|JAX|"
    r"\belement|iteration|round.robin|[Dd]ispatch|task runner|split|processing time|"
    r"[Oo]ptimal number of workers|\bjob ID\b|target_workers|"
    r"N\d+[A-Za-z]|!ZN|'tf\.|op attribute|requires attribute|property conversion|"
    r"^(?:Enables?|Whether|Specify|If set|If non-local|Timeout in seconds|Maximum number|"
    r"Number of|Dispatch|Converts|Lowers|A No-Op)\b|Speculation Barrier|Barrier only accepts|"
    r"Barrier is not implemented|Eigen|cudaCUDA"
)
# Source files of the pieces the mapping's specific rules rely on, confirmed in
# tensorflow/tensorflow; the first whose regex searches the piece wins. Each is named by the end
# of its path: the full path is the `__FILE__` string the release's library holds (the
# coordination service moved from `tsl/` (2.15) to `xla/tsl/` (2.17 and later)), with Bazel's
# `external/local_tsl/` / `external/local_xla/` left out.
CXX_SOURCES: tuple[tuple[str, str], ...] = (
    (
        r"Shape mismatch in the collective instance|another member in the group"
        r"|due to different input shapes at different members",
        "common_runtime/collective_param_resolver_local.cc",
    ),
    (r"^Collective ops is aborted by", "common_runtime/base_collective_executor.cc"),
    (
        r"heartbeat timeout\. This indicates",
        "distributed_runtime/coordination/coordination_service.cc",
    ),
)
_SOURCE_PATH = re.compile(r"^[\w./-]+/[\w-]+\.cc$")
_LONG = 400  # a "piece" longer than this is several tables merged, not a message


def _cxx_source(text: str, library: str, paths: list[str]) -> str:
    for pattern, suffix in CXX_SOURCES:
        if re.search(pattern, text):
            for path in paths:
                if path.endswith("/" + suffix):
                    return re.sub(r"^external/local_(?:tsl|xla)/", "", path)
    return library


def library_pieces(checkout: Path, release: str) -> list[Message]:
    found: dict[str, Message] = {}
    shipped = [checkout / library for library in LIBRARIES if (checkout / library).is_file()]
    texts_of = {lib: pieces(lib) for lib in shipped}
    paths = [p for texts in texts_of.values() for p in texts if _SOURCE_PATH.match(p)]
    for lib in shipped:
        library = lib.relative_to(checkout).as_posix()
        for text in texts_of[lib]:
            if len(text) > _LONG or text in found or not is_message(text):
                continue
            if not TOPIC.search(text) or FOREIGN.search(text):
                continue
            found[text] = Message(
                EMITTER,
                release,
                text,
                "literal",
                _cxx_source(text, library, paths),
                1,
                "FRAGMENT",
                "",
            )
    return sorted(found.values(), key=lambda m: (m.file, m.text))


def extract(checkout: Path, release: str) -> list[Message]:
    python = extract_python(checkout, release, EMITTER, INCLUDE, EXCLUDE)
    return python + library_pieces(checkout, release)
