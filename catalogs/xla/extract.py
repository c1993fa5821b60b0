"""XLA's runtime failure messages, from the C++ source of a pinned XLA commit (see source.yaml).

What JAX (and TensorFlow) users meet of XLA at run time on GPUs and TPUs: the distributed runtime
(`xla/pjrt/distributed`: the client and service behind `jax.distributed.initialize`, and the
coordination service with its agent, its gRPC client and the preemption sync manager, under
`xla/tsl/distributed_runtime` and, on newer lines, `xla/pjrt/distributed/coordination`), the
collective rendezvous (`xla/service/rendezvous.*`), the GPU collectives (NCCL cliques and
communicators, `xla/backends/gpu/collectives`, `xla/core/collectives`) and the GPU runtime's thunks
and command buffers (`xla/service/gpu/runtime` on older lines, `xla/backends/gpu/runtime` on
newer), the GPU executable and autotuners, the PJRT GPU client (`xla/pjrt/gpu`, the stream-executor
client), stream_executor's CUDA and GPU layers (allocation, contexts, streams, command buffers,
cudaMallocAsync), the BFC allocator (`xla/tsl/framework/bfc_allocator.cc`) and the allocator
adapter, and the TPU stream-executor wrappers whose source is open (libtpu itself is closed).

XLA reports a failure in three ways, all read here:

- a log stream, `LOG(ERROR) << "..." << x << "...";` (and `LOG_EVERY_N`, `LOG_FIRST_N`, `LOG_IF`,
  `LOG_EVERY_N_SEC`, `PLOG`): level INFO, WARNING, ERROR or FATAL, printed by absl as
  `E0926 17:26:32.075402  157988 file.cc:123] text`;
- a returned status, which reaches Python as `XlaRuntimeError` / `JaxRuntimeError: CODE: text`
  (level: the code, INTERNAL, UNAVAILABLE, RESOURCE_EXHAUSTED, ...): `absl::InternalError(expr)`,
  `absl::Status(absl::StatusCode::kInternal, expr)`, TSL's `errors::Internal(a, b, ...)` (its
  arguments concatenated), XLA's `Internal("fmt", ...)` (a printf format, xla/util.h) and
  `InternalStrCat(a, b, ...)`;
- CUDA's `ToStatus(result, "detail")` (stream_executor/cuda/cuda_status.h): "detail: CUDA_ERROR_X:
  string", INTERNAL, RESOURCE_EXHAUSTED for an out-of-memory result.

A message's text is a printf format: a string literal as written (`%` doubled), an
`absl::StrFormat` / `absl::StreamFormat` format as written (`%v` read as `%s`), an
`absl::Substitute` format with `$N` as `%s`, the pieces of an `absl::StrCat` or a `+`
concatenation in order, and `%s` for any other expression. CHECK and TF_RET_CHECK conditions
(internal invariants) and VLOG (debug output) are left out, as are tests, test utilities, mocks,
benchmarks and the ROCm, SYCL and oneAPI back ends. Nothing here decides a class: mapping.yaml does.
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core.message import Message
from catalogs.csource import literal_value, outside_literals, split_args, strip_comments

EMITTER = "xla"

# What is read, where a release has it (files move between lines).
ROOTS = (
    "xla/service/rendezvous.cc",
    "xla/service/rendezvous.h",
    "xla/pjrt/distributed",
    "xla/tsl/distributed_runtime/coordination",
    "xla/tsl/distributed_runtime/preemption",
    "xla/tsl/distributed_runtime/rpc/coordination",
    "xla/pjrt/gpu",
    "xla/pjrt/pjrt_stream_executor_client.cc",
    "xla/pjrt/local_device_state.cc",
    "xla/backends/gpu/collectives",
    "xla/core/collectives",
    "xla/service/gpu/runtime",
    "xla/backends/gpu/runtime",
    "xla/service/gpu/gpu_executable.cc",
    "xla/service/gpu/autotuning",
    "xla/backends/gpu/autotuner",
    "xla/stream_executor/cuda",
    "xla/stream_executor/gpu",
    "xla/stream_executor/integrations",
    "xla/stream_executor/tpu",
    "xla/tsl/framework/bfc_allocator.cc",
)
SUFFIXES = {".cc", ".h"}
# tests and their helpers; the ROCm, SYCL and oneAPI back ends; the device kernels' sources
SKIP = re.compile(
    r"(?:_test|_testlib|test_util|test_utils|_mock|mock_|_benchmark|_fuzz)[^/]*$|/tests?/|/testing/"
    r"|/tfrt/|(?:^|/)(?:rocm|hip|sycl|oneapi|rccl|mori|oneccl|roc_)[^/]*$|\.cu\.(?:cc|h)$"
    r"|_kernel(?:_lib)?\.(?:cc|h)$|_stub\.(?:cc|h)$"
    # debugging aids that run only under XLA debug flags, stand-alone tools, and argument checks
    # of descriptors XLA builds itself (TMA, ELF sections)
    r"|/(?:tma_metadata|elf_section_extraction|buffer_debug_log|print_buffer_contents|record_ffi"
    r"|select_k_exec_raft|topk|autotuner_main|triton_configs|cost_model_config_optimization"
    r"|dot_search_space|command_buffer_conversion_pass)\.(?:cc|h)$"
    r"|/(?:thunk_buffer_debug_(?!float_check)\w+|buffers_\w+_thunk)\.(?:cc|h)$"
)
# stream_executor/cuda also holds the compilers (ptxas, nvJitLink, NVPTX) and the library
# wrappers; of those only cuDNN's and cuBLAS's handle and version checks reach run-time logs
CUDA_KEEP = re.compile(
    r"xla/stream_executor/cuda/(?:cuda_(?:executor|context|driver|stream|event|timer|platform"
    r"|diagnostics|status|command_buffer(?:_12_9)?|device_allocator|host_allocator|unified_allocator"
    r"|raw_memory_allocation|memory_reservation|device_address_vmm_allocator|dnn|blas|blas_lt"
    r"|collectives)|nccl_\w+)\.cc$"
)

_LEVELS = {"INFO": "INFO", "WARNING": "WARNING", "ERROR": "ERROR", "FATAL": "FATAL"}
_LOG_HEAD = re.compile(
    r"(?<![\w.>])(LOG|PLOG|LOG_IF|LOG_EVERY_N|LOG_FIRST_N|LOG_EVERY_N_SEC|LOG_EVERY_POW_2"
    r"|LOG_IF_EVERY_N|PLOG_IF)\s*\(\s*(?:absl::|tsl::)?(?:LogSeverity::k)?(Q|D)?(INFO|WARNING|ERROR|FATAL|Info|Warning|Error|Fatal)\b"
)
_CODES = {
    "Internal": "INTERNAL",
    "InvalidArgument": "INVALID_ARGUMENT",
    "Unavailable": "UNAVAILABLE",
    "DeadlineExceeded": "DEADLINE_EXCEEDED",
    "ResourceExhausted": "RESOURCE_EXHAUSTED",
    "FailedPrecondition": "FAILED_PRECONDITION",
    "Aborted": "ABORTED",
    "Cancelled": "CANCELLED",
    "NotFound": "NOT_FOUND",
    "AlreadyExists": "ALREADY_EXISTS",
    "Unimplemented": "UNIMPLEMENTED",
    "Unknown": "UNKNOWN",
    "OutOfRange": "OUT_OF_RANGE",
    "PermissionDenied": "PERMISSION_DENIED",
    "DataLoss": "DATA_LOSS",
    "Unauthenticated": "UNAUTHENTICATED",
}
_CODE_NAMES = "|".join(sorted(_CODES, key=len, reverse=True))
# absl::InternalError(expr)
_ABSL_ERROR = re.compile(rf"(?<![\w.>])(?:::)?absl::({_CODE_NAMES})Error\s*\(")
# tsl::errors::Internal(a, b, ...): the arguments concatenated
_TSL_ERROR = re.compile(rf"(?<![\w.>])(?:(?:::)?tsl::)?errors::({_CODE_NAMES})\s*\(")
# xla::Internal("fmt", ...) (printf) and xla::InternalStrCat(a, b, ...)
_XLA_ERROR = re.compile(rf"(?<![\w.>:])(?:xla::)?({_CODE_NAMES})(StrCat)?\s*\(")
# absl::Status(absl::StatusCode::kInternal, expr)
_ABSL_STATUS = re.compile(
    r"(?<![\w.>])(?:::)?absl::Status\s*\(\s*(?:absl::)?StatusCode::k(\w+)\s*,"
)
# cuda::ToStatus(result, "detail")
_TO_STATUS = re.compile(r"(?<![\w.>])(?:(?:stream_executor::|se::)?cuda::)?ToStatus\s*\(")

_CALL = re.compile(
    r"^(?:::)?(?:absl::|tsl::strings::|strings::|tsl::)?"
    r"(StrCat|StrFormat|StreamFormat|Substitute|StrJoin|StrAppend)\s*\("
)
_WRAPPED = re.compile(r"^(?:std::)?string(?:_view)?\s*\(")
_CONVERSION = re.compile(r"%[-+ #0-9.*]*(?:hh|h|ll|l|z|j|t|L)?([a-zA-Z%])")
_PLACEHOLDER = "%s"


def _printf(fmt: str) -> str:
    """An absl format as a printf one: `%v` (absl's any value) read as `%s`."""
    return _CONVERSION.sub(
        lambda m: m.group(0)[:-1] + "s" if m.group(1) == "v" else m.group(0), fmt
    )


def _literal(text: str) -> str:
    return text.replace("%", "%%")


def _top_split(expr: str, operator: str) -> list[str]:
    """`expr` split on `operator` outside strings, chars and brackets."""
    pieces: list[str] = []
    start = 0
    for i, depth in outside_literals(expr):
        if i < start or depth != 0 or not expr.startswith(operator, i):
            continue
        if operator == "+" and (expr[i + 1 : i + 2] in ("+", "=") or expr[i - 1 : i] == "+"):
            continue
        if operator == "<<" and expr[i + 2 : i + 3] == "=":
            continue
        pieces.append(expr[start:i])
        start = i + len(operator)
    pieces.append(expr[start:])
    return [p.strip() for p in pieces if p.strip()]


def _strip_parens(expr: str) -> str:
    expr = expr.strip()
    while expr.startswith("(") and expr.endswith(")"):
        parsed = split_args(expr, 0)
        if parsed is None or parsed[1] != len(expr) or len(parsed[0]) != 1:
            break
        expr = parsed[0][0].strip()
    return expr


_MAX_VARIANTS = 4
"""A text with more wordings than this (several `cond ? "a" : "b"` pieces) keeps `%s` for each."""


def _ternary(expr: str) -> tuple[str, str] | None:
    """The two branches of a top-level `cond ? a : b`, or None."""
    question, resume = -1, 0
    for i, depth in outside_literals(expr):
        c = expr[i]
        if i < resume or depth != 0:
            continue
        if c == "?" and question < 0:
            question = i
        elif c == ":" and question >= 0:
            if expr[i + 1 : i + 2] == ":" or expr[i - 1 : i] == ":":
                resume = i + 2  # a scope operator (`std::`), not the branch separator
                continue
            return expr[question + 1 : i], expr[i + 1 :]
    return None


def _join(parts: list[list[str]]) -> list[str]:
    """The wordings of pieces printed one after the other: every combination of the pieces'
    wordings, or each piece with several wordings read as `%s` when they are too many."""
    out = [""]
    for wordings in parts:
        out = [head + tail for head in out for tail in wordings]
    if len(out) <= _MAX_VARIANTS:
        return list(dict.fromkeys(out))
    return _join([w if len(w) == 1 else [_PLACEHOLDER] for w in parts])


def _texts(expr: str) -> list[str]:
    """The printf texts an expression prints: its literals, a format call's format, each branch
    of a `cond ? "a" : "b"`, `%s` for anything else."""
    expr = _strip_parens(expr)
    value = literal_value(expr)
    if value is not None:
        return [_literal(value)]
    if expr in {"std::endl", "'\\n'", "endl"}:
        return ["\n"]
    wrapped = _WRAPPED.match(expr)
    if wrapped:
        parsed = split_args(expr, wrapped.end() - 1)
        if parsed is not None and parsed[1] == len(expr) and len(parsed[0]) == 1:
            return _texts(parsed[0][0])
    call = _CALL.match(expr)
    if call:
        parsed = split_args(expr, call.end() - 1)
        if parsed is not None and parsed[1] == len(expr) and parsed[0]:
            args = parsed[0]
            name = call.group(1)
            if name == "StrCat":
                return _join([_texts(a) for a in args])
            if name in {"StrFormat", "StreamFormat"}:
                fmt = literal_value(args[0])
                return [_printf(fmt) if fmt is not None else _PLACEHOLDER]
            if name == "Substitute":
                fmt = literal_value(args[0])
                if fmt is None:
                    return [_PLACEHOLDER]
                return [
                    re.sub(
                        r"\$(\d|\$)", lambda m: "$" if m.group(1) == "$" else "%s", _literal(fmt)
                    )
                ]
            return [_PLACEHOLDER]
    branches = _ternary(expr)
    if branches is not None:
        wordings = [w for branch in branches for w in _texts(branch)]
        if any(_has_words(w) for w in wordings):
            return list(dict.fromkeys(wordings))
        return [_PLACEHOLDER]
    if "+" in expr:
        parts = _top_split(expr, "+")
        if len(parts) > 1 and any(literal_value(p) is not None for p in parts):
            return _join([_texts(p) for p in parts])
    return [_PLACEHOLDER]


def _has_words(text: str) -> bool:
    return bool(re.search(r"[A-Za-z]{2}", _CONVERSION.sub("", text)))


def _finish(text: str) -> tuple[str, str] | None:
    text = text.strip(" ")
    if not _has_words(text):
        return None
    style = "printf" if _CONVERSION.search(text) else "literal"
    if style == "literal":
        text = text.replace("%%", "%")
    return text, style


def _statement_end(text: str, start: int) -> int:
    """Index of the `;` (or unmatched closing bracket) that ends the statement at `start`."""
    for i, depth in outside_literals(text, start):
        c = text[i]
        if (c in ")]}" and depth <= 0) or (c == ";" and depth <= 0):
            return i
    return len(text)


_KEYWORDS = {"if", "for", "while", "switch", "return", "catch", "else", "sizeof", "defined"}
_DEFINITION = re.compile(
    r"\b([A-Za-z_][\w:~]*)\s*\([^;{}()]*(?:\([^;{}()]*\)[^;{}()]*)*\)\s*(?:const\s*)?"
    r"(?:override\s*)?(?:->\s*[\w:<>, ]+\s*)?\{"
)


def _function(clean: str, offset: int) -> str:
    found = ""
    for match in _DEFINITION.finditer(clean, max(0, offset - 20000), offset):
        name = match.group(1).split("::")[-1]
        if name not in _KEYWORDS and not name.startswith(("TF_", "absl")):
            found = match.group(1)
    return found


def _logs(clean: str) -> list[tuple[int, str, list[str]]]:
    """(offset, level, wordings) of every log stream with literal text."""
    found = []
    for head in _LOG_HEAD.finditer(clean):
        if clean[max(0, head.start() - 8) : head.start()].rstrip().endswith("define"):
            continue
        parsed = split_args(clean, clean.index("(", head.start()))
        if parsed is None:
            continue
        after = parsed[1]
        rest = clean[after:]
        stream = re.match(r"\s*<<", rest)
        if stream is None:
            continue
        begin = after + stream.end()
        end = _statement_end(clean, begin)
        texts = _join([_texts(p) for p in _top_split(clean[begin:end], "<<")])
        if head.group(1).startswith("PLOG"):
            texts = [text + ": %s" for text in texts]  # PLOG appends strerror(errno)
        prefix, level = head.group(2), head.group(3).upper()
        if prefix == "D":
            level = "ERROR" if level == "FATAL" else level
        found.append((head.start(), _LEVELS[level], texts))
    return found


def _errors(clean: str) -> list[tuple[int, str, list[str]]]:
    """(offset, level, wordings) of every status built with literal text."""
    found = []
    for match in _ABSL_ERROR.finditer(clean):
        parsed = split_args(clean, match.end() - 1)
        if parsed is not None and len(parsed[0]) == 1 and parsed[0][0]:
            found.append((match.start(), _CODES[match.group(1)], _texts(parsed[0][0])))
    for match in _TSL_ERROR.finditer(clean):
        parsed = split_args(clean, match.end() - 1)
        if parsed is not None and parsed[0] and parsed[0][0]:
            texts = _join([_texts(a) for a in parsed[0]])
            found.append((match.start(), _CODES[match.group(1)], texts))
    for match in _XLA_ERROR.finditer(clean):
        parsed = split_args(clean, match.end() - 1)
        if parsed is None or not parsed[0] or not parsed[0][0]:
            continue
        args = parsed[0]
        if match.group(2):  # InternalStrCat(a, b, ...)
            texts = _join([_texts(a) for a in args])
        else:
            fmt = literal_value(args[0])
            if fmt is None:
                continue  # a function of that name, not the printf helper
            texts = [_printf(fmt)]
        found.append((match.start(), _CODES[match.group(1)], texts))
    for match in _ABSL_STATUS.finditer(clean):
        code = match.group(1)
        if code not in _CODES:
            continue
        parsed = split_args(clean, clean.index("(", match.start()))
        if parsed is not None and len(parsed[0]) == 2:
            found.append((match.start(), _CODES[code], _texts(parsed[0][1])))
    for match in _TO_STATUS.finditer(clean):
        parsed = split_args(clean, match.end() - 1)
        if parsed is None or len(parsed[0]) != 2:
            continue
        details = [d for d in _texts(parsed[0][1]) if d != _PLACEHOLDER]
        if details:
            found.append((match.start(), "INTERNAL", [d + ": %s" for d in details]))
    return found


_NAMED = re.compile(
    r"(?:(?:const\s+)?(?:std::string|auto)\s+)?\b(\w+)\s*(?<![=!<>+\-*/%&|^])=\s*"
    r"(?=(?:::)?absl::(?:StrCat|StrFormat|Substitute)\s*\()"
)


def _named(clean: str) -> list[tuple[int, str, list[str]]]:
    """(offset, level, wordings) of a text built into a named string (declared there or assigned in
    a branch) and then logged or returned (`std::string error = absl::StrCat(...); LOG(ERROR)
    << error; return absl::InternalError(error);`), at the level of its first use."""
    found = []
    for match in _NAMED.finditer(clean):
        end = _statement_end(clean, match.end())
        texts = _texts(clean[match.end() : end])
        name = re.escape(match.group(1))
        window = clean[end : end + 3000]
        use = re.search(
            rf"(?<![\w.>])(?:::)?absl::({_CODE_NAMES})Error\s*\(\s*{name}\s*\)"
            rf"|\bLOG\s*\(\s*(?:absl::)?(INFO|WARNING|ERROR|FATAL)\s*\)\s*<<\s*{name}\s*;",
            window,
        )
        if use is None:
            continue
        level = _CODES[use.group(1)] if use.group(1) else use.group(2)
        found.append((match.start(), level, texts))
    return found


def file_messages(source: str, rel: str, release: str) -> list[Message]:
    """Every failure message one C++ file prints or returns."""
    # a macro's line continuations (`"..." \` then the next literal) joined like whitespace
    clean = strip_comments(re.sub(r"\\\n", " \n", source))
    out: list[Message] = []
    for offset, level, texts in _logs(clean) + _errors(clean) + _named(clean):
        line = clean.count("\n", 0, offset) + 1
        function = _function(clean, offset)
        for raw in texts:
            finished = _finish(raw)
            if finished is None:
                continue
            text, style = finished
            out.append(Message(EMITTER, release, text, style, rel, line, level, function))
    return out


def _wanted(rel: str) -> bool:
    if Path(rel).suffix not in SUFFIXES or SKIP.search(rel):
        return False
    if rel.startswith("xla/stream_executor/cuda/"):
        return bool(CUDA_KEEP.match(rel))
    return True


def extract(checkout: Path, release: str) -> list[Message]:
    out: list[Message] = []
    for root in ROOTS:
        base = checkout / root
        paths = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file())
        for path in paths:
            rel = path.relative_to(checkout).as_posix()
            if not _wanted(rel):
                continue
            source = path.read_text(encoding="utf-8", errors="replace")
            out += file_messages(source, rel, release)
    return sorted(set(out))
