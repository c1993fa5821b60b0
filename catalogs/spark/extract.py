"""Apache Spark's error conditions, from the condition file of a pinned release (see source.yaml).

Scope: every condition (and sub-condition) in Spark's error-condition file: the message templates
of the errors the JVM side raises through SparkThrowable (SparkException, SparkRuntimeException,
AnalysisException, SparkOutOfMemoryError, ...), in the driver, the executors and the SQL engine,
which a Spark ML job's failures (MLlib, XGBoost4J-Spark, SynapseML, TorchDistributor, RAPIDS) end
in when they pass through Spark.

How Spark prints one (SparkThrowableHelper.getMessage, ErrorClassesJsonReader):
- the template is the condition's `message` lines joined with "\\n"; a sub-condition's is the
  parent's template, a space and the sub-condition's (a condition with sub-conditions is only
  raised through one of them);
- `<name>` is a parameter, substituted as a string (style `angle`);
- the text is printed after "[<CONDITION>] " ("[PARENT.SUB] "), except for the conditions named
  _LEGACY_ERROR_TEMP_<n>, printed bare. The name is part of what every release prints, so it is
  part of each message here (and what the mapping's rules may read); the SQLSTATE Spark 4 appends
  after the message is not.

A named condition's message is cut to its first line, the one that holds the name: the lines
after it are advice (a setting to change, "report this bug", "check cluster resources and
network connectivity") that several conditions share and other programs print alike. A legacy
condition, printed without its name, keeps all its lines.

Each message's level is its condition's SQLSTATE (a sub-condition's is its parent's): "42K03", or
"NONE" for one without a state. The legacy conditions have none; their number says which code
raises them (0xxx QueryParsingErrors, 1xxx QueryCompilationErrors, 2xxx QueryExecutionErrors,
3xxx Spark core and the rest), so their level is "LEGACY_PARSE", "LEGACY_ANALYSIS" or "LEGACY".
Its function is the condition's name; its line the line of the condition's key in the file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from catalogs.core.message import Message

EMITTER = "spark"
# where each release line keeps the file, newest layout first
FILES = (
    "common/utils/src/main/resources/error/error-conditions.json",  # 4.x
    "common/utils/src/main/resources/error/error-classes.json",  # 3.5
    "core/src/main/resources/error/error-classes.json",  # 3.4
)
LEGACY = "_LEGACY_ERROR_"
_KEY = re.compile(r'^(?P<indent> *)"(?P<name>[^"]+)" *: *\{')


def condition_file(root: Path) -> Path | None:
    for name in FILES:
        if (root / name).is_file():
            return root / name
    return None


def _key_lines(text: str) -> dict[tuple[str, ...], int]:
    """(condition,) and (condition, sub-condition) -> the line of its key. Conditions are the
    keys one level in; sub-conditions the keys inside a condition's "subClass" object."""
    lines: dict[tuple[str, ...], int] = {}
    top = ""
    in_sub = False
    top_indent = sub_indent = -1
    for number, line in enumerate(text.splitlines(), start=1):
        found = _KEY.match(line)
        if found is None:
            continue
        indent, name = len(found["indent"]), found["name"]
        if top_indent < 0:
            top_indent = indent
        if indent == top_indent:
            top, in_sub, sub_indent = name, False, -1
            lines.setdefault((top,), number)
        elif name == "subClass" and top:
            in_sub = True
        elif in_sub:
            if sub_indent < 0:
                sub_indent = indent
            if indent == sub_indent:
                lines.setdefault((top, name), number)
    return lines


def legacy_level(name: str) -> str:
    """The level of a legacy condition: the family its number puts it in."""
    number = name.rsplit("_", 1)[-1]
    if number.isdigit() and len(number) == 4:
        return {"0": "LEGACY_PARSE", "1": "LEGACY_ANALYSIS"}.get(number[0], "LEGACY")
    return "LEGACY"


def _template(entry: dict) -> str:
    return "\n".join(entry.get("message") or [])


def extract(checkout: Path, release: str) -> list[Message]:
    path = condition_file(checkout)
    if path is None:
        return []
    text = path.read_text(encoding="utf-8")
    conditions = json.loads(text)
    where = _key_lines(text)
    rel = path.relative_to(checkout).as_posix()
    out: list[Message] = []
    for name, entry in conditions.items():
        state = entry.get("sqlState") or ""
        legacy = name.startswith(LEGACY)
        level = legacy_level(name) if legacy else state or "NONE"
        parent = _template(entry)
        subs = entry.get("subClass") or {}
        cases = (
            [
                (f"{name}.{sub}", parent + " " + _template(value), where.get((name, sub), 0))
                for sub, value in subs.items()
            ]
            if subs
            else [(name, parent, where.get((name,), 0))]
        )
        for condition, template, line in cases:
            printed = template if legacy else f"[{condition}] {template}".split("\n", 1)[0]
            out.append(Message(EMITTER, release, printed, "angle", rel, line, level, condition))
    return out
