"""Example lines rendered from a message's own format string with realistic values.

Consumes the converted pieces of a message, the emitter's value table and line template (from
its source.yaml); produces the line the emitter would print, and the captures a signature
should find in it. A value is chosen by the capture name, then by the words in front of the
placeholder (an interface name after "interface", a device after "device"), then by the
conversion (`%d` prints a number, `%p` an address).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from catalogs.core.message import Message
from catalogs.core.pattern import Piece, Placeholder

VALUE_OF_CAPTURE: dict[str, str] = {
    "pg_rank": "3",
    "rank": "3",
    "local_rank": "3",
    "peer_rank": "5",
    "pid": "20315",
    "xid": "79",
    "errno": "110",
    "port": "43521",
    "seq": "1524",
    "bytes": "1048576",
    "timeout_ms": "600000",
    "gpu": "2",
}
VALUE_OF_KIND: dict[str, str] = {
    "int": "12",
    "hex": "7f3a",
    "oct": "644",
    "float": "3.25",
    "ptr": "0x7f3a2c000000",
    "char": "x",
}


@dataclass(frozen=True, slots=True)
class ValueRule:
    """A string value chosen when the literal text before a placeholder ends with `after`."""

    after: re.Pattern[str]
    value: str


# Checked in order against the literal text in front of a string placeholder.
DEFAULT_STRING_VALUES: tuple[tuple[str, str], ...] = (
    (r"(?i)(?:interface|ifname|iface|if)\W{0,3}$", "eth0"),
    (r"(?i)(?:hca|ib device|ibv device|device name)\W{0,3}$", "mlx5_0"),
    (
        r"(?i)(?:file|path|directory|dir|segment|shm|open|opening|mmap|unlink)\W{0,3}$",
        "/dev/shm/nccl-4bVQ1y",
    ),
    (
        r"(?i)(?:address|addr|host|hostname|from|to|connect|connecting|peer)\W{0,3}$",
        "10.12.3.7<43521>",
    ),
    (r"(?i)(?:plugin|library|lib|dlopen)\W{0,3}$", "libnccl-net.so"),
    (r"(?i)(?:version)\W{0,3}$", "2.18.3"),
    (r"(?i)(?:env|variable|var)\W{0,3}$", "NCCL_SOCKET_IFNAME"),
    (r"(?i)(?:name|key)\W{0,3}$", "default_pg"),
    (r"(?i)(?:type|kind)\W{0,3}$", "float"),
)
DEFAULT_STRING = "unknown"


def value_rules(extra: Sequence[Mapping[str, str]] = ()) -> tuple[ValueRule, ...]:
    """The emitter's own value rules (source.yaml `render`) first, then the defaults."""
    pairs = [(item["after"], item["value"]) for item in extra] + list(DEFAULT_STRING_VALUES)
    return tuple(ValueRule(re.compile(after), value) for after, value in pairs)


def _value(placeholder: Placeholder, before: str, rules: Sequence[ValueRule]) -> str:
    if placeholder.value:
        return placeholder.value
    if placeholder.name and placeholder.name in VALUE_OF_CAPTURE:
        return VALUE_OF_CAPTURE[placeholder.name]
    if placeholder.kind in VALUE_OF_KIND:
        return VALUE_OF_KIND[placeholder.kind]
    for rule in rules:
        if rule.after.search(before):
            return rule.value
    return DEFAULT_STRING


def render_values(
    pieces: Sequence[Piece], rules: Sequence[ValueRule], plain: Collection[int] = ()
) -> tuple[str, dict[str, str], list[tuple[int, int, int]]]:
    """The message text with every placeholder filled, the named captures' values, and where
    each filled value lies: (piece index, start, end) in the text. The placeholders whose
    piece index is in `plain` get a value that says nothing (a string is "unknown")."""
    out: list[str] = []
    captures: dict[str, str] = {}
    spans: list[tuple[int, int, int]] = []
    size = 0
    for index, piece in enumerate(pieces):
        if isinstance(piece, str):
            out.append(piece)
            size += len(piece)
            continue
        value = _value(piece, "".join(out)[-40:], () if index in plain else rules)
        if piece.closer and piece.closer in value:
            value = DEFAULT_STRING
        out.append(value)
        spans.append((index, size, size + len(value)))
        size += len(value)
        if piece.name:
            captures[piece.name] = value
    return "".join(out), captures, spans


def render_message(
    pieces: Sequence[Piece], rules: Sequence[ValueRule]
) -> tuple[str, dict[str, str]]:
    """The message text with every placeholder filled, and the named captures' values."""
    text, captures, _ = render_values(pieces, rules)
    return text, captures


def render_line(template: str, message: Message, text: str, file_prefix: str = "") -> str:
    """The rendered message in the emitter's real prefix (source.yaml `line_template`), with
    {message}, {file}, {path} (the file without `file_prefix`), {basename}, {stem} (the file
    name without its suffix: what logging's `%(module)s` prints, exp_manager), {module} (the
    path as a Python module name, the logger `getLogger(__name__)` gives: distributed.nanny),
    {line}, {level} and {function} filled."""
    path = message.file.removeprefix(file_prefix) if file_prefix else message.file
    module = PurePosixPath(path).with_suffix("").as_posix().replace("/", ".")
    return template.format(
        module=module.removesuffix(".__init__"),
        message=text,
        file=message.file,
        path=path,
        basename=PurePosixPath(message.file).name,
        stem=PurePosixPath(message.file).stem,
        line=message.line,
        level=message.level,
        function=message.function,
    )
