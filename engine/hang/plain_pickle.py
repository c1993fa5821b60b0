"""Loads an untrusted pickle that may hold only plain data: containers and scalars.

Consumes bytes; produces nested dicts, lists, tuples, str, bytes, int, float, bool and None, or
raises `PickleRefused` (the pickle asks for code: a class, a function, a persistent id) or
`PickleUnreadable` (truncated, corrupt, too large, too deep).

The standard unpickler is unsafe twice over, so it runs with two guards:
- It calls whatever callable a pickle names, so `pickle.loads` on an upload runs code
  (`__reduce__` returning `os.system`). Every route from pickle bytes to a callable passes
  through `find_class` (GLOBAL, STACK_GLOBAL, INST, extension codes); `_PlainUnpickler`
  refuses them all, and refuses persistent ids. REDUCE, NEWOBJ, OBJ and BUILD then find only
  plain data on the stack, which is not callable (APPENDS and SETITEMS call the built-in
  methods of a list, a dict or a bytearray, nothing else).
- It hashes dict keys and set members in C without a recursion guard: a 1 MB pickle whose dict
  key is a tuple nested a million deep crashes the process (SIGSEGV), whatever `find_class`
  does. Tuples nest only as deep as the pickle has tuple opcodes (TUPLE, TUPLE1-3), and each of
  those is one byte of the pickle, so counting those bytes (C speed, strings and numbers
  included) bounds the nesting. Within `SAFE_TUPLE_OPCODES` hashing needs a few tens of KiB of
  stack, and the C unpickler loads at once; above it, `_scan` first walks the opcodes in Python
  (a few times slower than loading) and refuses a tuple inside a tuple before anything is
  built.
After loading, one iterative walk refuses what a dump never holds (sets, a tuple inside a tuple,
any type but the plain ones, nesting deeper than the bound), so both routes admit the same
values. A refused pickle is walked by `_scan` again for a message that names the opcode.

A Flight Recorder pickle is written by torch's own pickler from dicts, lists, flat tuples,
strings, ints, floats, bools and None, so every genuine dump is admitted.
"""

from __future__ import annotations

import io
import pickle
import struct
from dataclasses import dataclass
from itertools import chain, compress, repeat
from operator import is_
from typing import Any, NoReturn

from denpex.errors import InputError


class PickleRefused(InputError):
    """The pickle names code to run, or data a dump never holds; it is not loaded."""


class PickleUnreadable(InputError):
    """The pickle is truncated, corrupt, or over the size or depth bound."""


@dataclass(frozen=True)
class PickleLimits:
    """Bounds on one dump, pickle or JSON (`denpex.ingest.sources.InputLimits` sets them)."""

    max_bytes: int = 512 * 1024 * 1024
    max_depth: int = 32
    """A Flight Recorder dump nests about six deep (dump, entries, entry, frames, frame)."""
    max_containers: int = 1_000_000
    """The dicts, lists and tuples the dump could build, counted before anything is built:
    every one needs a byte of its own that opens it (`CONTAINER_OPCODES`, or `{` and `[` in
    JSON), so the count of those bytes bounds them (strings holding such bytes count too: real
    dumps measure about twice their containers). An empty dict is 64 bytes of memory for one
    byte of pickle: without this bound a 400 MB dump of them takes tens of GB."""


# --- opcodes ------------------------------------------------------------------------------------

# Each admitted opcode falls in one class; the scan dispatches on the class, commonest first in
# torch's dumps (BINGET, MARK, BINPUT, BINUNICODE, BININT1, EMPTY_LIST, APPENDS).
(
    _C_SHORT_SIZED,  # 1-byte length, then payload; pushes a scalar
    _C_BINGET,
    _C_BINPUT,
    _C_MARK,
    _C_FILL_TO_MARK,  # APPENDS, SETITEMS
    _C_EMPTY,  # EMPTY_DICT, EMPTY_LIST
    _C_FIXED,  # fixed-size argument; pushes a scalar
    _C_BARE,  # no argument; pushes a scalar
    _C_SIZED,  # 4- or 8-byte length, then payload; pushes a scalar
    _C_TUPLE_N,  # TUPLE1, TUPLE2, TUPLE3
    _C_TUPLE_MARK,  # TUPLE
    _C_BUILD_TO_MARK,  # LIST, DICT
    _C_FILL_ONE,  # APPEND
    _C_FILL_TWO,  # SETITEM
    _C_EMPTY_TUPLE,
    _C_LONG_BINPUT,
    _C_LONG_BINGET,
    _C_MEMOIZE,
    _C_LINE_SCALAR,  # protocol 0 scalars ended by a newline
    _C_PUT,
    _C_GET,
    _C_POP,
    _C_POP_MARK,
    _C_DUP,
    _C_PROTO,
    _C_FRAME,
    _C_STOP,
) = range(1, 28)

_CLASS = [0] * 256
_ARGUMENT: list[tuple[int, str] | int] = [0] * 256
for _code, _cls, _arg in (
    (0x8C, _C_SHORT_SIZED, 0),  # SHORT_BINUNICODE
    (ord("U"), _C_SHORT_SIZED, 0),  # SHORT_BINSTRING
    (ord("C"), _C_SHORT_SIZED, 0),  # SHORT_BINBYTES
    (0x8A, _C_SHORT_SIZED, 0),  # LONG1
    (ord("h"), _C_BINGET, 0),
    (ord("q"), _C_BINPUT, 0),
    (ord("("), _C_MARK, 0),
    (ord("e"), _C_FILL_TO_MARK, 0),  # APPENDS
    (ord("u"), _C_FILL_TO_MARK, 0),  # SETITEMS
    (ord("}"), _C_EMPTY, 0),  # EMPTY_DICT
    (ord("]"), _C_EMPTY, 0),  # EMPTY_LIST
    (ord("J"), _C_FIXED, 4),  # BININT
    (ord("K"), _C_FIXED, 1),  # BININT1
    (ord("M"), _C_FIXED, 2),  # BININT2
    (ord("G"), _C_FIXED, 8),  # BINFLOAT
    (ord("N"), _C_BARE, 0),  # NONE
    (0x88, _C_BARE, 0),  # NEWTRUE
    (0x89, _C_BARE, 0),  # NEWFALSE
    (ord("X"), _C_SIZED, (4, "<I")),  # BINUNICODE
    (0x8D, _C_SIZED, (8, "<Q")),  # BINUNICODE8
    (ord("T"), _C_SIZED, (4, "<i")),  # BINSTRING
    (ord("B"), _C_SIZED, (4, "<I")),  # BINBYTES
    (0x8E, _C_SIZED, (8, "<Q")),  # BINBYTES8
    (0x96, _C_SIZED, (8, "<Q")),  # BYTEARRAY8
    (0x8B, _C_SIZED, (4, "<i")),  # LONG4
    (0x85, _C_TUPLE_N, 1),
    (0x86, _C_TUPLE_N, 2),
    (0x87, _C_TUPLE_N, 3),
    (ord("t"), _C_TUPLE_MARK, 0),
    (ord("l"), _C_BUILD_TO_MARK, 0),  # LIST
    (ord("d"), _C_BUILD_TO_MARK, 0),  # DICT
    (ord("a"), _C_FILL_ONE, 0),  # APPEND
    (ord("s"), _C_FILL_TWO, 0),  # SETITEM
    (ord(")"), _C_EMPTY_TUPLE, 0),
    (ord("r"), _C_LONG_BINPUT, 0),
    (ord("j"), _C_LONG_BINGET, 0),
    (0x94, _C_MEMOIZE, 0),
    (ord("I"), _C_LINE_SCALAR, 0),  # INT
    (ord("L"), _C_LINE_SCALAR, 0),  # LONG
    (ord("F"), _C_LINE_SCALAR, 0),  # FLOAT
    (ord("S"), _C_LINE_SCALAR, 0),  # STRING
    (ord("V"), _C_LINE_SCALAR, 0),  # UNICODE
    (ord("p"), _C_PUT, 0),
    (ord("g"), _C_GET, 0),
    (ord("0"), _C_POP, 0),
    (ord("1"), _C_POP_MARK, 0),
    (ord("2"), _C_DUP, 0),
    (0x80, _C_PROTO, 0),
    (0x95, _C_FRAME, 0),
    (ord("."), _C_STOP, 0),
):
    _CLASS[_code] = _cls
    _ARGUMENT[_code] = _arg

_NAMED_CODE = {
    ord("c"): "GLOBAL",
    0x93: "STACK_GLOBAL",
    ord("i"): "INST",
    ord("o"): "OBJ",
    ord("R"): "REDUCE",
    0x81: "NEWOBJ",
    0x92: "NEWOBJ_EX",
    ord("b"): "BUILD",
    0x82: "EXT1",
    0x83: "EXT2",
    0x84: "EXT4",
    ord("P"): "PERSID",
    ord("Q"): "BINPERSID",
    0x97: "NEXT_BUFFER",
    0x98: "READONLY_BUFFER",
    0x8F: "EMPTY_SET",
    0x90: "ADDITEMS",
    0x91: "FROZENSET",
}

# What the scan keeps on its stack: only whether each object is a tuple, never the object.
_OTHER, _TUPLE = 0, 1


def _scan(data: bytes) -> None:
    """Refuse, before any object is built, a pickle that is not plain data with flat tuples.

    Mirrors the C unpickler's stack and mark fence (Modules/_pickle.c) with object kinds only,
    so the kind of every object is known exactly; no value is constructed.
    """
    stack: list[int] = []
    push = stack.append
    marks: list[int] = []
    fence = 0
    memo: dict[int, int] = {}
    classes, arguments = _CLASS, _ARGUMENT
    size = len(data)
    i = 0
    try:
        while i < size:
            op = data[i]
            cls = classes[op]
            i += 1
            if cls == _C_BINGET:
                push(memo[data[i]])
                i += 1
            elif cls == _C_MARK:
                marks.append(len(stack))
                fence = len(stack)
            elif cls == _C_BINPUT:
                if len(stack) <= fence:
                    raise IndexError("stack underflow")
                memo[data[i]] = stack[-1]
                i += 1
            elif cls == _C_SIZED:
                width, layout = arguments[op]
                (length,) = struct.unpack_from(layout, data, i)
                if length < 0:
                    raise ValueError("negative length")
                i += width + length
                push(_OTHER)
            elif cls == _C_FIXED:
                i += arguments[op]
                push(_OTHER)
            elif cls in (_C_EMPTY, _C_BARE):
                push(_OTHER)
            elif cls == _C_SHORT_SIZED:
                i += 1 + data[i]
                push(_OTHER)
            elif cls in (_C_FILL_TO_MARK, _C_BUILD_TO_MARK, _C_TUPLE_MARK, _C_POP_MARK):
                start = marks.pop()
                fence = marks[-1] if marks else 0
                items = stack[start:]
                del stack[start:]
                if cls == _C_FILL_TO_MARK and len(stack) <= fence:
                    raise IndexError("items added with no list or dict below them")
                if cls == _C_TUPLE_MARK and _TUPLE in items:
                    raise PickleRefused("refused: a tuple inside a tuple; a dump never holds one")
                if cls in (_C_BUILD_TO_MARK, _C_TUPLE_MARK):
                    push(_TUPLE if cls == _C_TUPLE_MARK else _OTHER)
            elif cls in (_C_FILL_ONE, _C_FILL_TWO):
                count = 1 if cls == _C_FILL_ONE else 2
                if len(stack) - count <= fence:
                    raise IndexError("stack underflow")
                del stack[-count:]
            elif cls == _C_TUPLE_N:
                count = arguments[op]
                if len(stack) - count < fence:
                    raise IndexError("stack underflow")
                if _TUPLE in stack[-count:]:
                    raise PickleRefused("refused: a tuple inside a tuple; a dump never holds one")
                del stack[-count:]
                push(_TUPLE)
            elif cls == _C_EMPTY_TUPLE:
                push(_TUPLE)
            elif cls in (_C_LONG_BINPUT, _C_LONG_BINGET, _C_MEMOIZE):
                if cls == _C_LONG_BINGET:
                    (key,) = struct.unpack_from("<I", data, i)
                    i += 4
                    push(memo[key])
                    continue
                if len(stack) <= fence:
                    raise IndexError("stack underflow")
                if cls == _C_MEMOIZE:
                    memo[len(memo)] = stack[-1]
                else:
                    (key,) = struct.unpack_from("<I", data, i)
                    i += 4
                    memo[key] = stack[-1]
            elif cls in (_C_LINE_SCALAR, _C_PUT, _C_GET):
                end = data.index(b"\n", i)
                if cls == _C_LINE_SCALAR:
                    push(_OTHER)
                elif cls == _C_GET:
                    push(memo[int(data[i:end])])
                elif len(stack) <= fence:
                    raise IndexError("stack underflow")
                else:
                    memo[int(data[i:end])] = stack[-1]
                i = end + 1
            elif cls == _C_POP:
                if len(stack) > fence:
                    stack.pop()
                elif marks:  # POP with nothing above the fence drops the mark, as in C
                    marks.pop()
                    fence = marks[-1] if marks else 0
                else:
                    raise IndexError("stack underflow")
            elif cls == _C_DUP:
                if len(stack) <= fence:
                    raise IndexError("stack underflow")
                push(stack[-1])
            elif cls == _C_PROTO:
                i += 1
            elif cls == _C_FRAME:
                i += 8
            elif cls == _C_STOP:
                return
            elif op in _NAMED_CODE:
                raise PickleRefused(
                    f"refused: the pickle uses {_NAMED_CODE[op]}"
                    f"{_global_name(data, i) if op == ord('c') else ''}, which loads or calls "
                    "code or builds sets; a dump holds only plain data"
                )
            else:
                raise ValueError(f"unknown opcode 0x{op:02x}")
    except (IndexError, KeyError, struct.error, ValueError) as error:
        raise PickleUnreadable(f"corrupt pickle near byte {i}: {error}") from None
    raise PickleUnreadable("truncated pickle: the data ends before its STOP opcode")


def _global_name(data: bytes, start: int) -> str:
    """The module and name a GLOBAL opcode names, for the error message."""
    parts = data[start : start + 200].split(b"\n", 2)[:2]
    return " " + ".".join(p.decode("ascii", "replace") for p in parts) if len(parts) == 2 else ""


_CONTAINERS = frozenset({dict, list, tuple})
_PLAIN = _CONTAINERS | {str, bytes, bytearray, int, float, bool, type(None)}


def check_plain(value: Any, max_depth: int, what: str = "pickle") -> None:
    """Refuse, in a loaded value, what the opcode scan refuses before loading (sets and any
    other type that is not plain data, a tuple inside a tuple) and nesting deeper than
    `max_depth`. Level by level, without recursion; shared and cyclic containers are walked
    once. Each level is taken whole by `map`, `chain` and `compress`, which loop in C: a dump
    holds some ten thousand objects, and a Python step for each would cost more than loading
    it."""
    kind = type(value)
    if kind not in _PLAIN:
        _refuse_type(kind)
    level = [value] if kind in _CONTAINERS else []
    seen = set(map(id, level))
    depth = 0
    while level:
        depth += 1
        if depth > max_depth:
            raise PickleUnreadable(
                f"{what} nests deeper than {max_depth} levels (the max_dump_depth limit)"
            )
        kinds = list(map(type, level))
        tuples = list(compress(level, map(is_, kinds, repeat(tuple))))
        if tuples and tuple in set(map(type, chain.from_iterable(tuples))):
            raise PickleRefused("refused: a tuple inside a tuple; a dump never holds one")
        dict_values = map(dict.values, compress(level, map(is_, kinds, repeat(dict))))
        members = [*chain.from_iterable(level), *chain.from_iterable(dict_values)]
        member_kinds = list(map(type, members))
        present = set(member_kinds)
        if not present <= _PLAIN:
            _refuse_type(next(iter(present - _PLAIN)))
        if present.isdisjoint(_CONTAINERS):
            return
        containers = list(compress(members, map(_CONTAINERS.__contains__, member_kinds)))
        by_id = dict(zip(map(id, containers), containers, strict=True))
        fresh = by_id.keys() - seen
        seen |= fresh
        level = list(map(by_id.__getitem__, fresh))


def _refuse_type(kind: type) -> NoReturn:
    opcode = {set: " (EMPTY_SET, ADDITEMS)", frozenset: " (FROZENSET)"}.get(kind, "")
    raise PickleRefused(
        f"refused: the pickle builds a {kind.__name__}{opcode}; a dump holds only plain data"
    )


# --- loading ------------------------------------------------------------------------------------

# What the C unpickler raises on malformed input, besides UnpicklingError itself.
_MALFORMED = (
    pickle.UnpicklingError,
    EOFError,
    ValueError,
    TypeError,
    IndexError,
    KeyError,
    AttributeError,
    OverflowError,
    MemoryError,
    RecursionError,
    UnicodeDecodeError,
    struct.error,
)


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> NoReturn:
        raise PickleRefused(
            f"refused: the pickle asks to load {module}.{name}; a dump holds only plain data"
        )

    def persistent_load(self, pid: object) -> NoReturn:
        raise PickleRefused("refused: the pickle refers to a persistent object")


SAFE_TUPLE_OPCODES = 1000
"""Up to this many bytes that could be tuple opcodes, the pickle is loaded without an opcode
scan: hashing a key nested this deep takes about 64 KiB of C stack (measured: some 60 bytes a
level), far within any thread's."""

_TUPLE_OPCODES = (b"t", b"\x85", b"\x86", b"\x87")  # TUPLE, TUPLE1, TUPLE2, TUPLE3
CONTAINER_OPCODES = (b"}", b"]", b")", b"(", b"\x85", b"\x86", b"\x87", b"\x8f")
"""EMPTY_DICT, EMPTY_LIST, EMPTY_TUPLE, MARK (which DICT, LIST, TUPLE and FROZENSET need),
TUPLE1-3 and EMPTY_SET: no container is built without one of these bytes."""


def load_plain(data: bytes, limits: PickleLimits | None = None) -> Any:
    """The plain data in `data`. Nothing the pickle names is imported or called."""
    limits = limits or PickleLimits()
    if len(data) > limits.max_bytes:
        raise PickleUnreadable(f"pickle of {len(data)} bytes is over the {limits.max_bytes} bound")
    if sum(data.count(code) for code in _TUPLE_OPCODES) > SAFE_TUPLE_OPCODES:
        _scan(data)  # tuples could nest deep enough to crash the hashing of a key: prove not
    containers = sum(data.count(code) for code in CONTAINER_OPCODES)
    if containers > limits.max_containers:
        raise PickleUnreadable(
            f"pickle that could build {containers} containers, over the bound of "
            f"{limits.max_containers} (the max_dump_containers limit)"
        )
    try:
        value = _PlainUnpickler(io.BufferedReader(io.BytesIO(data))).load()
        check_plain(value, limits.max_depth)
    except PickleRefused as refused:
        _explain(data, refused)
    except EOFError:
        _explain(data, PickleUnreadable("truncated pickle: the data ends before its STOP opcode"))
    except _MALFORMED as error:
        _explain(data, PickleUnreadable(f"corrupt pickle: {_short(error)}"))
    return value


def _explain(data: bytes, failure: InputError) -> NoReturn:
    """Fail with the opcode scan's words when it finds the fault (they name the opcode or the
    byte: `GLOBAL posix.system`, `corrupt pickle near byte 812`), else with the loader's. Only
    a refused or broken pickle is scanned here."""
    _scan(data)
    raise failure from None


def _short(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    return text if len(text) <= 200 else text[:200] + "..."
