"""NVIDIA's kernel driver (NVRM) reporting a failed status check, one message per status code.

The resource manager's check macros (NV_CHECK_OK*, NV_ASSERT_OK*) print, when a call returns a
status other than NV_OK, src/nvidia/src/libraries/utils/nvassert.c's "Check failed: %s
(0x%08X) returned from %s @ %s:%d" (or "Assertion failed: ..."): the status as
nvstatusToString() spells it, its value, the expression and the source file and line. The
status text is the code's description with its name in brackets, as src/common/shared/nvstatus/
nvstatus.c builds it from src/common/sdk/nvidia/inc/nvstatuscodes.h's
NV_STATUS_CODE(name, value, "description") table. So each code of that table becomes one
message, the status and value written in: "<description> [<name>] (0x<value>) returned from
%s @ %s:%d". Its level is the macro's word before it (CHECK for "Check failed: ", ASSERT for
"Assertion failed: "); both print the same text, which one signature reads after either.
The file and line are the code's in nvstatuscodes.h; the function is the code's name.
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core.csource import decode_literal
from catalogs.core.message import Message

EMITTER = "nvrm_status"
CODES = "src/common/sdk/nvidia/inc/nvstatuscodes.h"
STRINGS = "src/common/shared/nvstatus/nvstatus.c"
CHECKS = "src/nvidia/src/libraries/utils/nvassert.c"
_CODE = re.compile(
    r'^\s*NV_STATUS_CODE\(\s*(\w+)\s*,\s*(0x[0-9A-Fa-f]+)\s*,\s*"([^"]*)"\s*\)', re.M
)
# nvstatus.c: `string " [" #name "]"`: the description, then the name between two literals.
_STRING = re.compile(r'\bstring\s+"([^"]*)"\s*#name\s*"([^"]*)"')
# nvassert.c: the format of a failed status check, up to the macro that ends it.
_CHECK = re.compile(r'"(Check failed|Assertion failed): %s \(0x%08X\) returned from "\s*(\w+)')
_FMT = r'#define\s+{}\s+"([^"]*)"'
LEVELS = {"Assertion failed": "ASSERT", "Check failed": "CHECK"}


def extract(checkout: Path, release: str) -> list[Message]:
    codes = (checkout / CODES).read_text(encoding="utf-8", errors="replace")
    strings = (checkout / STRINGS).read_text(encoding="utf-8", errors="replace")
    checks = (checkout / CHECKS).read_text(encoding="utf-8", errors="replace")
    spelt = _STRING.search(strings)
    if spelt is None:
        raise ValueError(f"{STRINGS}: no status string of the form description [name]")
    opening, closing = spelt.groups()
    kinds: dict[str, str] = {}
    for found in _CHECK.finditer(checks):
        macro = re.search(_FMT.format(found.group(2)), checks)
        if macro is None:
            raise ValueError(f"{CHECKS}: {found.group(2)} is not defined as a string")
        kinds.setdefault(found.group(1), decode_literal(macro.group(1)).rstrip("\n"))
    if not kinds:
        raise ValueError(f"{CHECKS}: no failed-status format")
    found_messages: list[Message] = []
    for match in _CODE.finditer(codes):
        name, value, description = match.groups()
        line = codes.count("\n", 0, match.start()) + 1
        status = f"{decode_literal(description)}{opening}{name}{closing}".replace("%", "%%")
        # assertion first: at one level's severity the later call site's level is kept
        for kind in sorted(kinds):
            text = f"{status} (0x{int(value, 16):08X}) returned from {kinds[kind]}"
            found_messages.append(
                Message(EMITTER, release, text, "printf", CODES, line, LEVELS[kind], name)
            )
    return found_messages
