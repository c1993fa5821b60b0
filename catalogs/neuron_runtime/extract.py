"""AWS Neuron's closed-source runtime (NRT, libnrt), collectives (libnccom, "CCOM"), compiler
(neuronx-cc) and torch-neuronx messages, from the aws-neuron-sdk documentation at a pinned SDK
release (see source.yaml).

The programs ship as binaries only; their failure messages are documented in the open
aws-neuron-sdk repository. The checkout holds, per SDK tag:

- `reference/neuron_messages.tsv`: the messages the troubleshooting guides and other pages show,
  one row each: the doc file and line where it is shown, the log level and the `MODULE:function`
  its runtime prefix carries (`<date> <time> 3882:3882  ERROR  TDRV:log_dev_mem  <message>`), the
  printf format (the doc example's values made `%s` / `%d`) and the documented text verbatim;
- `src/libnrt/include/nrt/nrt_status.h`: the NRT_STATUS codes. The runtime's failure dump
  (`NRT:nrt_infodump`) names the failed status, `Failure: NRT_EXEC_OOB in nrt_execute()`: one
  message per code, its line the code's line in the header;
- `compiler/error-codes/E*.rst` (SDK 2.28 and later): neuronx-cc's documented error codes, printed
  as `[NCC_EOOM001] <text>`: one message per code, its text the bracketed code (the prose after it
  is not documented), its line the page's title line.

Nothing here decides a class: mapping.yaml does.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

from catalogs.core import Message
from catalogs.enums import members

EMITTER = "neuron_runtime"
REFERENCE = "reference/neuron_messages.tsv"
STATUS = "src/libnrt/include/nrt/nrt_status.h"
CODES = "compiler/error-codes"
_CODE_TITLE = re.compile(r"^(NCC_E[A-Z]{3}\d{3})$", re.M)


def _documented(checkout: Path, release: str) -> list[Message]:
    found: list[Message] = []
    with (checkout / REFERENCE).open(encoding="utf-8", newline="") as table:
        for row in csv.DictReader(table, delimiter="\t", quoting=csv.QUOTE_NONE):
            text = row["format"]
            style = "printf" if re.search(r"%[sdx]", text) else "literal"
            found.append(
                Message(
                    EMITTER,
                    release,
                    text,
                    style,
                    row["file"],
                    int(row["line"]),
                    row["level"],
                    row["function"],
                )
            )
    return found


def _statuses(checkout: Path, release: str) -> list[Message]:
    header = checkout / STATUS
    if not header.is_file():
        return []
    return [
        Message(
            EMITTER,
            release,
            f"Failure: {member.name} in %s",
            "printf",
            STATUS,
            member.line,
            "ERROR",
            "NRT:nrt_infodump",
        )
        for member in members(header.read_text(encoding="utf-8"), "NRT_")
        if member.name != "NRT_SUCCESS"
    ]


def _compiler_codes(checkout: Path, release: str) -> list[Message]:
    folder = checkout / CODES
    if not folder.is_dir():
        return []
    found: list[Message] = []
    for page in sorted(folder.glob("E*.rst")):
        text = page.read_text(encoding="utf-8")
        title = _CODE_TITLE.search(text)
        if title is None:
            continue
        line = text.count("\n", 0, title.start()) + 1
        found.append(
            Message(
                EMITTER,
                release,
                f"[{title.group(1)}] %s",
                "printf",
                f"{CODES}/{page.name}",
                line,
                "NCC",
                title.group(1),
            )
        )
    return found


def extract(checkout: Path, release: str) -> list[Message]:
    return [
        *_documented(checkout, release),
        *_statuses(checkout, release),
        *_compiler_codes(checkout, release),
    ]
