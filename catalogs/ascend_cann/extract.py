"""Huawei CANN (Ascend NPU runtime, HCCL, driver) error codes as the job's output shows them.

CANN prints a failure as an error code and a message, `EI0002: [PID: 7277] <time> The wait
execution of the Notify register times out. ...`, through its error manager; a framework
(torch_npu, MindSpore) repeats those lines in its exception. The checkout (see source.yaml)
holds, per CANN line, the shipped pieces these lines come from:

- `conf/error_manager/error_code.json`: the error manager's table, one entry per code
  (`ErrCode`, `errTitle`, `ErrMessage` as a printf format). Each entry of the runtime-side
  components is one message, its level the code (`EI0002`), its function the title. Left out:
  operator compilation and tiling checks (E5-EA, EB, E8: the operators' argument checks), the
  offline model converter's arguments and model parsers (E10, E11, E12, E16: `atc`), image
  processing (EN), model compression (EO), tuning and deployment tools (EC, ED, EF, WF) and the
  queue scheduler (EM), which training and serving jobs do not print.
- `src/runtime/...` (8.5 and later, where the runtime is open source): the texts the runtime
  reports to the error manager, `RT_LOG_INNER_MSG(level, fmt, ...)` (printed under `EE9999:
  Inner Error!`), `RT_LOG_CALL_MSG(module, fmt, ...)` (under the module's inner-error code,
  `EI9999` for HCCL, `EL9999` for the driver, ...) and `RT_LOG_OUTER_MSG(code, fmt, ...)` (the
  text inside that code's template, `EE1001: The argument is invalid.Reason: <fmt>`). A
  device's fault report (`The error from device(chipId:%u, dieId:%u), serial number is %lu,
  notify wait timeout occurred during task execution, stream_id:%hu, ...`) is cut after the
  clause that names the fault: the fields after it differ between chips and releases
  (`timeout:%u` in 8.0, `timeout=%us` in 8.5) and name no cause.
- `torch_npu/csrc/core/npu/NPUErrorCodes.h`: the descriptions of the ACL runtime's result
  codes (`507011` ...), as torch_npu prints them after a failed call (`[Error]: The model
  execution failed.`); each code's name comes from `include/acl/error_codes/rt_error_codes.h`
  where it is there. Only the first line (the statement) is the message; the advice under it
  is shared by several codes.
- `torch_npu/csrc/core/npu/NPUException.{h,cpp}`: the `ERRxxyyy` tags torch_npu prints before
  those descriptions (`ERR00100 PTA call acl api failed`): every sub-module with every error
  kind, as `formatErrorCode` joins them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from catalogs.core import Message
from catalogs.core.csource import find_calls

EMITTER = "ascend_cann"
TABLE = "conf/error_manager/error_code.json"
RT_HEADER = "include/acl/error_codes/rt_error_codes.h"
DESCRIPTIONS = "torch_npu/csrc/core/npu/NPUErrorCodes.h"
EXCEPTION_H = "torch_npu/csrc/core/npu/NPUException.h"
EXCEPTION_CPP = "torch_npu/csrc/core/npu/NPUException.cpp"
RUNTIME = "src/runtime"

# code prefixes of the components a training or serving job runs: GE (graph engine), FE, AI
# CPU, TE fusion, RTS (runtime), ACL, HCCL, HCCP, profiling, the driver, dump, operators
KEPT = (
    "E13",
    "E14",
    "E19",
    "W1",
    "E2",
    "E3",
    "E4",
    "W4",
    "EE",
    "WE",
    "EH",
    "EI",
    "EJ",
    "EK",
    "EL",
    "EP",
    "EZ",
)
# base_info.hpp: the code each reporting module's messages are printed under
MODULE_CODES = {
    "ERR_MODULE_AICPU": "E39999",
    "ERR_MODULE_DRV": "EL9999",
    "ERR_MODULE_HCCL": "EI9999",
    "ERR_MODULE_GE": "EE9999",
    "ERR_MODULE_PROFILE": "EK9999",
    "ERR_MODULE_TBE": "EZ9999",
    "ERR_MODULE_SYSTEM": "EE9999",
    "ERR_MODULE_RTS": "EE9999",
    "ERR_MODULE_FE": "E29999",
    "ERR_MODULE_AICPU_TIMEOUT": "E30008",
    "ERR_MODULE_INVALID_ARGUMENT": "EE1001",
}
LEVEL_CODES = {"RT_LOG_ERROR": "EE9999", "RT_LOG_WARNING": "WE9999"}
OUTER_CODES = {
    "RT_INVALID_ARGUMENT_ERROR": "EE1001",
    "RT_STREAM_SYNC_TIMEOUT_INNER_ERROR": "EE1002",
    "RT_AICPU_TIMEOUT_ERROR": "E30008",
    "RT_TSD_SUBPROCESS_NUM_EXCEED_THE_LIMIT_ERROR": "E30003",
    "RT_TSD_SUBPROCESS_BINARY_FILE_DAMAGED": "E30004",
    "RT_TSD_DEVICE_DISCONNECTED": "E30005",
    "RT_TSD_DRV_HDC_SEND_FILE_FAILED_ERROR": "E30006",
    "RT_TSD_ADD_AICPUSD_TO_CGROUP_FAILED": "E30007",
}
_DEVICE_REPORT = re.compile(
    r"^((?:type = %\w+,)?The (?:error|extend info) from device\([^)]*\), "
    r"serial number is %\w+[.,] ?[^,.]+)"
)
_RT_DEFINE = re.compile(r"^#define\s+(ACL_\w+)\s+(\d+)", re.M)
_DESCRIPTION = re.compile(r'\{(\d+),\s*"((?:[^"\\]|\\.)*)')
_ENUM = re.compile(r"enum class (SubModule|ErrCode) \{(.*?)\}", re.S)
_MAP_ENTRY = re.compile(r'\{(?:SubModule|ErrCode)::(\w+),\s*"([^"]*)"\}')


def _line_of(text: str, needle: str, start: int = 0) -> tuple[int, int]:
    at = text.find(needle, start)
    return (text.count("\n", 0, at) + 1, at) if at >= 0 else (1, start)


def table_messages(checkout: Path, release: str) -> list[Message]:
    raw = (checkout / TABLE).read_text(encoding="utf-8")
    found: list[Message] = []
    cursor = 0
    for entry in json.loads(raw)["error_info_list"]:
        code = entry["ErrCode"].strip()
        line, cursor = _line_of(raw, f'"{entry["ErrCode"]}"', cursor)
        if not code.startswith(KEPT):
            continue
        title = " ".join((entry.get("errTitle") or "").split())
        text = entry["ErrMessage"]
        found.append(Message(EMITTER, release, text, "printf", TABLE, line, code, title))
    return found


def result_code_messages(checkout: Path, release: str) -> list[Message]:
    names = {int(n): name for name, n in _RT_DEFINE.findall((checkout / RT_HEADER).read_text())}
    source = (checkout / DESCRIPTIONS).read_text(encoding="utf-8")
    found: list[Message] = []
    for m in _DESCRIPTION.finditer(source):
        code = int(m.group(1))
        statement = m.group(2).split("\\n")[0].strip()
        line = source.count("\n", 0, m.start()) + 1
        function = f"{code} {names[code]}" if code in names else str(code)
        found.append(
            Message(EMITTER, release, statement, "literal", DESCRIPTIONS, line, "ACL", function)
        )
    return found


def error_tag_messages(checkout: Path, release: str) -> list[Message]:
    header = (checkout / EXCEPTION_H).read_text(encoding="utf-8")
    source = (checkout / EXCEPTION_CPP).read_text(encoding="utf-8")
    numbers: dict[str, dict[str, int]] = {}
    for kind, body in _ENUM.findall(header):
        numbers[kind] = {k: int(v) for k, v in re.findall(r"(\w+)\s*=\s*(\d+)", body)}
    words = dict(_MAP_ENTRY.findall(source))
    line, _ = _line_of(source, 'oss << " " << submoduleMap')
    found: list[Message] = []
    for module, m_number in sorted(numbers["SubModule"].items(), key=lambda kv: kv[1]):
        for kind, k_number in sorted(numbers["ErrCode"].items(), key=lambda kv: kv[1]):
            if kind == "SUC" or kind not in words or module not in words:
                continue
            text = f"ERR{m_number:02d}{k_number:03d} {words[module]} {words[kind]}"
            found.append(
                Message(
                    EMITTER, release, text, "literal", EXCEPTION_CPP, line, "PTA", "formatErrorCode"
                )
            )
    return found


def runtime_messages(checkout: Path, release: str) -> list[Message]:
    root = checkout / RUNTIME
    if not root.is_dir():
        return []  # CANN before 8.5: the runtime's source is not public
    found: list[Message] = []
    for path in sorted(root.rglob("*")):
        if path.suffix not in {".cc", ".cpp", ".h", ".hpp"} or not path.is_file():
            continue
        rel = path.relative_to(checkout).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        calls = ("RT_LOG_INNER_MSG", "RT_LOG_CALL_MSG", "RT_LOG_OUTER_MSG")
        for call in find_calls(text, calls):
            if len(call.args) < 2 or not call.args[1]:
                continue
            first = _first_arg(text, call.line, call.name)
            table = {"RT_LOG_INNER_MSG": LEVEL_CODES, "RT_LOG_CALL_MSG": MODULE_CODES}.get(
                call.name, OUTER_CODES
            )
            level = table.get(first, "EE9999")
            function = _enclosing_function(text, call.line)
            report = _DEVICE_REPORT.match(call.args[1])
            statement = report.group(1) if report else call.args[1]
            found.append(
                Message(EMITTER, release, statement, "printf", rel, call.line, level, function)
            )
    return found


def _first_arg(text: str, line: int, name: str) -> str:
    lines = text.splitlines()
    window = "\n".join(lines[line - 1 : line + 2])
    m = re.search(re.escape(name) + r"\(\s*([\w:]+)", window)
    return m.group(1).split("::")[-1] if m else ""


_FUNCTION = re.compile(
    r"^[\w:<>,*&\s]*?\b([A-Za-z_]\w*)::(\w+)\s*\([^;{]*\)\s*(?:const\s*)?\{", re.M
)


def _enclosing_function(text: str, line: int) -> str:
    before = "\n".join(text.splitlines()[:line])
    matches = list(_FUNCTION.finditer(before))
    return matches[-1].group(2) if matches else ""


def extract(checkout: Path, release: str) -> list[Message]:
    return (
        table_messages(checkout, release)
        + runtime_messages(checkout, release)
        + result_code_messages(checkout, release)
        + error_tag_messages(checkout, release)
    )
