"""rdma-core's messages: libibverbs' string tables (ibv_wc_status_str, ibv_event_type_str,
ibv_port_state_str) that applications print for a failed work completion or an async event,
and the error prints of libibverbs and the mlx5 and efa providers.

Reads an rdma-core release tree (`libibverbs/`, `providers/mlx5`, `providers/efa`). `level`
is `err`/`warn`/`info` for log calls, and the table's name (`wc_status`, `event_type`,
`port_state`) for table strings. Example programs and man pages are not the library's output
and are not read; debug prints (mlx5_dbg, verbs_debug) are not extracted.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.core.message import Message
from catalogs.csource import find_calls, string_macros, table_strings

EMITTER = "rdma_core"
FOLDERS = ("libibverbs", "providers/mlx5", "providers/efa")
SKIP = ("libibverbs/examples", "libibverbs/man", "/tests/")
# call -> (index of the format argument, level)
CALLS: dict[str, tuple[int, str]] = {
    "verbs_err": (1, "err"),
    "verbs_err_datapath": (1, "err"),
    "verbs_warn": (1, "warn"),
    "verbs_info": (1, "info"),
    "mlx5_err": (1, "err"),
    "fprintf": (1, "err"),
}
TABLES: dict[str, str] = {
    "wc_status_str": "wc_status",
    "event_type_str": "event_type",
    "port_state_str": "port_state",
}


def _message(release: str, text: str, file: str, line: int, level: str, function: str) -> Message:
    return Message(
        emitter=EMITTER,
        release=release,
        text=text,
        style="printf" if "%" in text else "literal",
        file=file,
        line=line,
        level=level,
        function=function,
    )


def extract(checkout: Path, release: str) -> list[Message]:
    header = checkout / "libibverbs/ibverbs.h"
    macros = string_macros(header.read_text(encoding="utf-8")) if header.is_file() else {}
    out: list[Message] = []
    for folder in FOLDERS:
        base = checkout / folder
        if not base.is_dir():
            continue
        for path in sorted(p for p in base.rglob("*") if p.suffix in (".c", ".h") and p.is_file()):
            relative = str(path.relative_to(checkout))
            if any(skip in "/" + relative for skip in SKIP):
                continue
            source = path.read_text(encoding="utf-8", errors="replace")
            calls = find_calls(
                source, CALLS, format_arg={k: v[0] for k, v in CALLS.items()}, macros=macros
            )
            for call in calls:
                if call.name == "fprintf" and call.args[0].strip() != "stderr":
                    continue
                text = call.text.rstrip("\n")
                if text.strip():
                    level = CALLS[call.name][1]
                    out.append(_message(release, text, relative, call.line, level, call.function))
    enum_strs = checkout / "libibverbs/enum_strs.c"
    if enum_strs.is_file():
        source = enum_strs.read_text(encoding="utf-8")
        for table, level in TABLES.items():
            for text, line in table_strings(source, table):
                relative = "libibverbs/enum_strs.c"
                out.append(_message(release, text, relative, line, level, f"ibv_{level}_str"))
    return sorted(set(out))
