"""The amdgpu kernel driver's failure messages, as dmesg shows them on hosts of ROCm runs: ring
timeouts and GPU resets, GPU page faults (VM_L2_PROTECTION_FAULT), RAS errors and bad pages, XGMI
and IB scheduling failures.

Reads the driver's core files of a kernel source tree (drivers/gpu/drm/amd/amdgpu). `level` names
the logging call's family, since each prints its own prefix before the message:

- `DRM_ERROR`: `__drm_err` prints "[drm:<function> [amdgpu]] *ERROR* " (the caller's name);
  `DRM_DEV_ERROR`: the same after the device's "amdgpu 0000:c1:00.0: ";
- `DRM_WARN`, `DRM_NOTE`, `DRM_INFO`: "[drm] ";
- `dev_err`, `dev_warn`, `dev_notice`, `dev_info` (and `_once`, `_ratelimited`): the device's
  "amdgpu 0000:c1:00.0: " and amdgpu.h's dev_fmt "amdgpu: "; `drm_err`/`drm_warn`/`drm_info`
  print through them with "[drm] " (and "*ERROR* " for drm_err), which the text keeps;
- `RAS_EVENT_LOG` (Linux 6.12's RAS reports): dev_printk at KERN_INFO, the device's prefix and
  the RAS event's id in braces ("{12}"), without dev_fmt.

Errors and warnings are all kept; info and notice lines only when their text reports a failure
(a reset, a fault, a timeout, lost VRAM, RAS errors) or a step of a GPU reset ("GPU %s begin!").
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core.message import Message
from catalogs.csource import find_calls, string_macros

EMITTER = "amdgpu"
ROOT = "drivers/gpu/drm/amd/amdgpu"
FILES: tuple[str, ...] = (
    "amdgpu_job.c",
    "amdgpu_device.c",
    "amdgpu_ring.c",
    "amdgpu_ib.c",
    "amdgpu_fence.c",
    "amdgpu_vm.c",
    "gmc_v9_0.c",
    "gmc_v10_0.c",
    "gmc_v11_0.c",
    "gmc_v12_0.c",
    "amdgpu_ras.c",
    "amdgpu_ras_eeprom.c",
    "amdgpu_umc.c",
    "amdgpu_xgmi.c",
    "amdgpu_aca.c",
    "amdgpu_mca.c",
)
_ONCE = ("", "_once", "_ratelimited")
DRM_CALLS: dict[str, str] = {
    "DRM_ERROR": "DRM_ERROR",
    "DRM_ERROR_RATELIMITED": "DRM_ERROR",
    "DRM_DEV_ERROR": "DRM_DEV_ERROR",
    **{f"DRM_{lv}{s}": f"DRM_{lv}" for lv in ("WARN", "NOTE", "INFO") for s in ("", "_ONCE")},
}
DEV_CALLS: dict[str, str] = {
    f"dev_{lv}{s}": f"dev_{'warn' if lv == 'warn' else lv}"
    for lv in ("emerg", "alert", "crit", "err", "warn", "notice", "info")
    for s in _ONCE
}
# drm_err(drm, fmt) is dev_err(drm->dev, "[drm] *ERROR* " fmt) (include/drm/drm_print.h)
DRM_DEV_CALLS: dict[str, tuple[str, str]] = {
    f"drm_{lv}{s}": (f"dev_{lv}", "[drm] *ERROR* " if lv == "err" else "[drm] ")
    for lv in ("err", "warn", "notice", "info")
    for s in _ONCE
}
# RAS_EVENT_LOG(adev, event_id, fmt, ...) (amdgpu_ras.h)
RAS_CALLS: dict[str, str] = {"RAS_EVENT_LOG": "RAS_EVENT_LOG"}
FORMAT_ARG: dict[str, int] = {
    **dict.fromkeys(DRM_CALLS, 0),
    "DRM_DEV_ERROR": 1,
    **dict.fromkeys(DEV_CALLS, 1),
    **dict.fromkeys(DRM_DEV_CALLS, 1),
    "RAS_EVENT_LOG": 2,
}
QUIET_LEVELS = ("DRM_INFO", "DRM_NOTE", "dev_info", "dev_notice", "RAS_EVENT_LOG")
FAILURE_WORDS = re.compile(
    r"(?i)\b(?:fail\w*|error\w*|unable|cannot|can't|could not|abort\w*|time[d ]?out|hang|hung|"
    r"invalid|mismatch\w*|exceed\w*|reset|fault\w*|lost|poison\w*|uncorrect\w*|bad page\w*|"
    r"retir\w*|fatal|not supported|unsupported|refused|denied|disabl\w+ due)\b|^GPU "
)
_KERNEL_P = re.compile(r"%\*?p[A-Za-z]+")


def _message(text: str, level: str, relative: str, line: int, function: str, release: str):
    text = _KERNEL_P.sub("%s", text).rstrip("\n")
    if not re.search(r"[A-Za-z]{3}", text):
        return None
    if level in QUIET_LEVELS and not FAILURE_WORDS.search(text):
        return None
    style = "printf" if "%" in text else "literal"
    return Message(EMITTER, release, text, style, relative, line, level, function)


def extract(checkout: Path, release: str) -> list[Message]:
    found: list[Message] = []
    for name in FILES:
        path = checkout / ROOT / name
        if not path.is_file():
            continue
        relative = f"{ROOT}/{name}"
        source = path.read_text(encoding="utf-8", errors="replace")
        macros = string_macros(source)
        names = {**DRM_CALLS, **DEV_CALLS, **RAS_CALLS}
        calls = [
            (call, *DRM_DEV_CALLS[call.name])
            if call.name in DRM_DEV_CALLS
            else (call, names[call.name], "")
            for call in find_calls(
                source, [*names, *DRM_DEV_CALLS], format_arg=FORMAT_ARG, macros=macros
            )
        ]
        for call, level, prefix in calls:
            message = _message(
                prefix + call.text, level, relative, call.line, call.function, release
            )
            if message is not None:
                found.append(message)
    return sorted(set(found))
