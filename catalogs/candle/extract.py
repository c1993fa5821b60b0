"""Hugging Face candle's failure messages, and those of the cudarc crate it runs CUDA through,
from the source of a pinned release (see source.yaml: each line's checkout holds candle at its
tag and, under `cudarc/`, the cudarc release that candle line resolves to).

A failed candle program (an example, mistral.rs, text-embeddings-inference, a user's binary)
prints a `candle_core::Error`: its Display, usually after `Error: ` (what `main` returning an
`Err` prints), or in a panic after "called `Result::unwrap()` on an `Err` value: " (candle's
Debug is its Display). Read here:

- candle-core, candle-nn and candle-transformers' shared parts (`candle-transformers/src/models/`,
  the per-model files, is left out; so is the Metal back end, Apple's GPUs, which no CUDA run
  reaches: its files and the `metal_fwd` of every custom op): the `#[error("...")]` texts of
  the error enums (`candle_core::Error`, the CUDA back end's `CudaError`), `bail!(...)`,
  `.context(...)` and `.with_context(|| format!(...))` (level `Error`); `panic!`,
  `unimplemented!`, `todo!`, `unreachable!` and `.expect(...)` (level `panic`); and, where code
  constructs an error variant whose own format says too little to be read alone, the text it
  then prints with the literal passed in (`CudaError::InternalError("dtype mismatch in matmul
  op")` -> `internal error 'dtype mismatch in matmul op'`, `Error::Msg(format!("..."))`,
  `Error::UnexpectedDType { msg: "...", .. }`). Comments (doc examples) and `#[cfg(test)]`
  modules are left out.
- cudarc: the result enums of the libraries candle calls, each code as its error type's Debug
  prints it (the error types print `{self:?}` as their Display): the driver's `CUresult` as
  `DriverError(CUDA_ERROR_OUT_OF_MEMORY, "<the driver's own string>")`, cuBLAS's
  `CublasError(CUBLAS_STATUS_...)`, cuRAND's, cuDNN's and NVRTC's likewise (level: the type's
  name, function: the code), read from the bindgen `sys` bindings (every CUDA version's enum,
  each code once); `NcclError`, whose Debug prints its name alone (the `ncclResult_t` code is
  not printed); the panics of its safe layer and of the dynamic loader (`Unable to dynamically
  load the "cuda" shared library ...`), each distinct `.expect(...)` text of the generated
  bindings once (`Expected symbol in library`), and its build script's panics (`cargo build`
  output: unsupported CUDA toolkit, no `nvcc`).
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs import rustsource
from catalogs.core import Message

EMITTER = "candle"
CANDLE_DIRS = ("candle-core/src", "candle-nn/src", "candle-transformers/src")
CANDLE_SKIP = ("candle-transformers/src/models/", "candle-core/src/test_utils.rs")
# the Metal back end of a custom op (candle-nn's fused ops, candle-core's custom ops)
METAL_FUNCTIONS = ("metal_fwd",)
CUDARC_LIBS = ("driver", "cublas", "cublaslt", "curand", "cudnn", "nvrtc", "nccl")
# library -> (the bindgen enum of its result codes, how its error type's Debug prints a code)
RESULT_ENUMS = {
    "driver": ("cudaError_enum", 'DriverError({name}, "{{}}")', "DriverError"),
    "cublas": ("cublasStatus_t", "CublasError({name})", "CublasError"),
    "curand": ("curandStatus", "CurandError({name})", "CurandError"),
    "cudnn": ("cudnnStatus_t", "CudnnError({name})", "CudnnError"),
    "nvrtc": ("nvrtcResult", "NvrtcError({name})", "NvrtcError"),
}
# The forms whose first string argument is the message: a displayed error (`Error`) or a panic.
START = re.compile(
    r"(?P<kind>#\[error\(|(?<!\w)(?:bail|anyhow)!\s*\(|\.context\(|"
    r"\.with_context\(\s*\|\|\s*format!\s*\(|"
    r"(?<!\w)(?:panic|unimplemented|todo|unreachable)!\s*\(|\.expect\()"
)
# a literal written by a Debug/Display impl of cudarc's error types (`write!(f, "NcclError")`)
_WRITE = re.compile(r"impl\s+(?:std::fmt::|core::fmt::|fmt::)?Debug\s+for\s+(\w+)\s*\{")
_WRITE_CALL = re.compile(r"write!\(\s*f\s*,")


def _level(kind: str, _lvl: str | None) -> str:
    if kind.startswith(("#[error", "bail", "anyhow", ".context", ".with_context")):
        return "Error"
    return "panic"


def _message(
    release: str, found: rustsource.RustMessage, file: str, function: str | None = None
) -> Message:
    return Message(
        EMITTER,
        release,
        found.text,
        found.style,  # type: ignore[arg-type]
        file,
        found.line,
        found.level,
        found.function if function is None else function,
    )


def _candle_files(checkout: Path) -> list[tuple[str, str]]:
    files = []
    for path in rustsource.rust_files(checkout, CANDLE_DIRS):
        rel = path.relative_to(checkout).as_posix()
        if rel.startswith(CANDLE_SKIP) or "metal" in rel.rsplit("/", 1)[-1] or "/metal" in rel:
            continue
        files.append((rel, path.read_text(encoding="utf-8", errors="replace")))
    return files


def _candle(checkout: Path, release: str) -> list[Message]:
    files = _candle_files(checkout)
    formats: dict[tuple[str, str], str] = {}
    variants: dict[tuple[str, int], str] = {}  # (file, line of an #[error]) -> Enum::Variant
    for rel, src in files:
        for enum, variant, fmt, line in rustsource.error_variants(src):
            formats.setdefault((enum, variant), fmt)
            variants[(rel, line)] = f"{enum}::{variant}"
    found: list[Message] = []
    for rel, src in files:
        for m in rustsource.messages(src, START, _level, blank=True, skip_tests=True):
            if m.function not in METAL_FUNCTIONS:
                variant = variants.get((rel, m.line))
                found.append(_message(release, m, rel, variant or m.function))
        for m in rustsource.constructed(src, formats, "Error"):
            if m.function not in METAL_FUNCTIONS:
                found.append(_message(release, m, rel))
    return found


def _sys_files(checkout: Path, lib: str) -> list[Path]:
    """A library's generated bindings: `sys/mod.rs` (0.14 and later: every CUDA version in one
    file), then the per-version `sys/sys_<version>.rs` of older releases, newest first."""
    folder = checkout / "cudarc/src" / lib / "sys"
    if not folder.is_dir():
        return []
    versions = sorted(folder.glob("sys_*.rs"), key=lambda p: p.name, reverse=True)
    return [p for p in [folder / "mod.rs", *versions] if p.is_file()]


def _result_codes(checkout: Path, release: str) -> list[Message]:
    found: list[Message] = []
    for lib, (enum, shape, level) in RESULT_ENUMS.items():
        seen: set[str] = set()
        for path in _sys_files(checkout, lib):
            rel = path.relative_to(checkout).as_posix()
            src = path.read_text(encoding="utf-8", errors="replace")
            for name, line in rustsource.enum_members(src, enum):
                if name in seen:
                    continue
                seen.add(name)
                text = shape.format(name=name)
                style = rustsource.style_of(text)
                found.append(Message(EMITTER, release, text, style, rel, line, level, name))  # type: ignore[arg-type]
    return found


def _debug_names(checkout: Path, release: str) -> list[Message]:
    """What a cudarc error type's own Debug writes when it is a literal (`NcclError`)."""
    found: list[Message] = []
    for lib in CUDARC_LIBS:
        path = checkout / "cudarc/src" / lib / "result.rs"
        if not path.is_file():
            continue
        rel = path.relative_to(checkout).as_posix()
        src = rustsource.blank_comments(path.read_text(encoding="utf-8", errors="replace"))
        for impl in _WRITE.finditer(src):
            end = src.find("\n}", impl.end())
            for call in _WRITE_CALL.finditer(src, impl.end(), end if end >= 0 else len(src)):
                lit = rustsource.string_at(src, call.end())
                if lit is None or "{" in lit[0]:
                    continue
                line = src.count("\n", 0, call.start()) + 1
                found.append(
                    Message(EMITTER, release, lit[0], "literal", rel, line, impl.group(1), "fmt")
                )
    return found


def _cudarc_code(checkout: Path, release: str) -> list[Message]:
    """The panics of cudarc's safe layer, loader and build script, and each distinct `.expect`
    text of its generated bindings once."""
    found: list[Message] = []
    paths = [checkout / "cudarc/build.rs", checkout / "cudarc/src/lib.rs"]
    for lib in CUDARC_LIBS:
        folder = checkout / "cudarc/src" / lib
        if folder.is_dir():
            paths += sorted(p for p in folder.rglob("*.rs") if "sys" not in p.parts)
    for path in paths:
        if not path.is_file():
            continue
        rel = path.relative_to(checkout).as_posix()
        src = path.read_text(encoding="utf-8", errors="replace")
        for m in rustsource.messages(src, START, _level, blank=True, skip_tests=True):
            found.append(_message(release, m, rel))
    seen: set[str] = set()
    for lib in CUDARC_LIBS:
        for path in _sys_files(checkout, lib):
            rel = path.relative_to(checkout).as_posix()
            src = path.read_text(encoding="utf-8", errors="replace")
            for m in rustsource.messages(src, START, _level, blank=True, skip_tests=True):
                if m.text not in seen:
                    seen.add(m.text)
                    found.append(_message(release, m, rel))
    return found


def extract(checkout: Path, release: str) -> list[Message]:
    return (
        _candle(checkout, release)
        + _result_codes(checkout, release)
        + _debug_names(checkout, release)
        + _cudarc_code(checkout, release)
    )
