"""Triton's (github.com/triton-lang/triton) failure messages, from the Python files of a pinned
release's `triton` wheel (see source.yaml): the runtime (JIT, autotuner, cache, build, drivers),
the compiler and the NVIDIA and AMD back ends, what a training run meets when a Triton kernel
(its own, a library's, or one torch.compile generated) is compiled and launched.

Read with `ast`: raises, warnings and logger calls, and `assert cond, "..."` in the runtime, the
back ends and the language's front end (`triton.language`: `core.py`, `semantic.py`,
`standard.py`, `math.py`, the `extra` libdevice wrappers), whose checks of a kernel's code and
arguments (dtypes, shapes, constexprs, the fp8 types the GPU's architecture supports) reach the
log inside the `CompilationError` that quotes the kernel: `at 1:0: def kernel(...) ^
ValueError("type fp8e4nv not supported in this architecture. ...")`.

Triton's own exception classes print what their `__str__` returns (or the `self.message` their
`__init__` builds, before 3.0): "out of resource: shared memory, Required: ..., Hardware limit:
..." is an `OutOfResources`, "PTXAS error: ..." a `PTXASError`; each is a message at the level of
its qualified name, as a traceback's last line prints it (`triton.runtime.errors.OutOfResources`).
The strings the NVIDIA back end hands a `PTXASError` (`error = 'Internal Triton PTX codegen
error'`) are read as that exception's text.

The drivers' C code (the `driver.c` files, and the kernel launchers whose C source the Python
modules hold as a string) raises with `PyErr_SetString(PyExc_X, "...")` and
`PyErr_Format(PyExc_X, "...", ...)` (level: the Python exception, style printf); `gpuAssert`
prefixes the CUDA or HIP driver's error string with "Triton Error [CUDA]: ". The interpreter
(TRITON_INTERPRET=1), Gluon (`triton.experimental`) and the tools are left out.
Nothing here decides a class: mapping.yaml does.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from catalogs.core.csource import find_calls
from catalogs.core.message import Message
from catalogs.python_messages import _joined, _Text, extract_python

EMITTER = "triton"
PY_INCLUDE = (
    "triton/runtime/",
    "triton/compiler/",
    "triton/backends/",
    "triton/common/",
    "triton/errors.py",
    "triton/language/",
)
PY_EXCLUDE = ("triton/runtime/interpreter.py",)
# every assert of the language's front end is a check of the kernel's code or its arguments that
# a compile error quotes ("Dot op does not support fp8e4nv on CUDA arch < 90"), as in the runtime
ASSERT_PATHS = ("triton/runtime/", "triton/backends/", "triton/common/", "triton/language/")
# the C sources: the drivers, and the Python modules that hold a launcher's C source
C_UNDER = ("triton/backends/", "triton/runtime/backends/", "triton/compiler/make_launcher.py")
C_CALLS = ("PyErr_SetString", "PyErr_Format")
_PREFIX = re.compile(r'const char\s*\*\s*prefix\s*=\s*"(Triton Error \[\w+\]: )"')
_ERROR_FILES = ("triton/runtime/errors.py", "triton/compiler/errors.py")


def _string_text(node: ast.AST) -> tuple[str, str] | None:
    """(text, style) of a string constant or an f-string."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value, "literal"
    if isinstance(node, ast.JoinedStr):
        out = _Text()
        _joined(node, out)
        return out.render(), out.style
    return None


def _concat(node: ast.AST) -> tuple[str, str] | None:
    """A string, an f-string, or a `+` of them (f"a" f"b" is already one JoinedStr)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _concat(node.left), _concat(node.right)
        if left and right:
            return _join(left, right)
        return None
    return _string_text(node)


def _as_fstring(text: tuple[str, str]) -> str:
    if text[1] == "fstring":
        return text[0]
    return text[0].replace("{", "{{").replace("}", "}}")


def _join(a: tuple[str, str], b: tuple[str, str]) -> tuple[str, str]:
    if a[1] == b[1] == "literal":
        return a[0] + b[0], "literal"
    return _as_fstring(a) + _as_fstring(b), "fstring"


def _exception_texts(tree: ast.Module, module: str) -> list[tuple[str, str, int, str]]:
    """(text, style, line, qualified class) of each exception class whose `__str__` returns a
    string, or whose `__init__` builds `self.message` from strings."""
    found = []
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        level = f"{module}.{cls.name}"
        for fn in (n for n in cls.body if isinstance(n, ast.FunctionDef)):
            if fn.name == "__str__":
                for node in ast.walk(fn):
                    if isinstance(node, ast.Return) and node.value is not None:
                        text = _concat(node.value)
                        if text:
                            found.append((*text, node.lineno, level))
            if fn.name == "__init__":
                built: tuple[str, str] | None = None
                line = 0
                for stmt in fn.body:
                    target = stmt.targets[0] if isinstance(stmt, ast.Assign) else None
                    if isinstance(stmt, ast.AugAssign):
                        target = stmt.target
                    if not (
                        isinstance(target, ast.Attribute)
                        and target.attr == "message"
                        and isinstance(target.value, ast.Name)
                        and target.value.id == "self"
                    ):
                        continue
                    text = _concat(stmt.value)  # type: ignore[union-attr]
                    if text is None:
                        continue
                    if isinstance(stmt, ast.AugAssign) and built:
                        built = _join(built, text)
                    else:
                        built, line = text, stmt.lineno
                if built:
                    found.append((*built, line, level))
    return found


def _ptxas_errors(tree: ast.Module) -> list[tuple[str, int]]:
    """The literal strings assigned to `error` in a function that raises a PTXASError."""
    found = []
    for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        raises = [
            n
            for n in ast.walk(fn)
            if isinstance(n, ast.Raise)
            and isinstance(n.exc, ast.Call)
            and getattr(n.exc.func, "id", getattr(n.exc.func, "attr", "")) == "PTXASError"
        ]
        if not raises:
            continue
        for node in ast.walk(fn):
            if (
                isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "error" for t in node.targets)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
            ):
                found.append(("PTXAS error: " + node.value.value, node.lineno))
    return found


def _c_messages(text: str, rel: str, release: str) -> list[Message]:
    found = []
    for call in find_calls(text, C_CALLS):
        if len(call.args) < 2 or not call.args[1].strip():
            continue
        # find_calls gives the text of literal arguments only: the exception is read from the line
        name = _exception_name(text, call.line)
        found.append(Message(EMITTER, release, call.args[1], "printf", rel, call.line, name, ""))
    for m in _PREFIX.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        found.append(
            Message(EMITTER, release, m.group(1) + "%s", "printf", rel, line, "RuntimeError", "")
        )
    return found


def _exception_name(text: str, line: int) -> str:
    """The `PyExc_X` named on the call's line or the next (the first argument is not a string,
    so `find_calls` does not hand it over)."""
    lines = text.splitlines()[line - 1 : line + 1]
    found = re.search(r"PyExc_(\w+)", " ".join(lines))
    return found.group(1) if found else "RuntimeError"


def extract(checkout: Path, release: str) -> list[Message]:
    found = extract_python(checkout, release, EMITTER, PY_INCLUDE, PY_EXCLUDE, ASSERT_PATHS)
    root = checkout / "triton"
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(checkout).as_posix()
        if not path.is_file() or not rel.startswith(C_UNDER):
            continue
        if path.suffix == ".c" or (path.suffix == ".py" and "PyErr_" in path.read_text()):
            found += _c_messages(path.read_text(encoding="utf-8", errors="replace"), rel, release)
        if path.suffix == ".py" and rel.endswith("compiler.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for text, line in _ptxas_errors(tree):
                level = "triton.runtime.errors.PTXASError"
                found.append(Message(EMITTER, release, text, "literal", rel, line, level, ""))
    for rel in _ERROR_FILES:
        path = checkout / rel
        if not path.is_file():
            continue
        module = rel.removesuffix(".py").replace("/", ".")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for text, style, line, level in _exception_texts(tree, module):
            found.append(Message(EMITTER, release, text, style, rel, line, level, ""))  # type: ignore[arg-type]
    return found
