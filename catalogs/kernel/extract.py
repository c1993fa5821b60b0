"""The Linux kernel's host-failure messages: the OOM killer, memory cgroups, machine checks,
EDAC, APEI/GHES and CPER, PCIe AER/DPC/hotplug, hung tasks, lockups and RCU stalls, and the
x86 fault lines (segfault, general protection, traps).

Reads a kernel source tree. The text of each message is the format as the kernel prints it:
the file's `pr_fmt`/`dev_fmt` prefix joined in front, `dev_*`/`pci_*` calls with the driver and
device (`"%s %s: "`) that dev_printk puts first, the EDAC printk macros with their
`EDAC MC%d: ` prefixes, and `panic()` with "Kernel panic - not syncing: ". The kernel's `%p`
extensions (`%pV`, `%pS`, `%px`, `%*pbl`, ...) print text, so they are written as `%s`.
`level` is the printk level (emerg, alert, crit, err, warn, notice, info, default, cont).
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogs.core.message import Message
from catalogs.csource import define_string, find_calls, literal_value, string_macros

EMITTER = "kernel"

FILES: tuple[str, ...] = (
    "mm/oom_kill.c",
    "mm/memcontrol.c",
    "mm/page_alloc.c",
    "mm/memory-failure.c",
    "arch/x86/kernel/cpu/mce/core.c",
    "arch/x86/kernel/cpu/mce/severity.c",
    "arch/x86/kernel/cpu/mce/amd.c",
    "arch/x86/kernel/cpu/mce/intel.c",
    "arch/x86/kernel/cpu/mce/apei.c",
    "arch/x86/kernel/cpu/mce/therm_throt.c",
    "arch/x86/kernel/cpu/mce/threshold.c",
    "arch/x86/kernel/cpu/mce/p5.c",
    "arch/x86/kernel/cpu/mce/winchip.c",
    "arch/x86/kernel/cpu/mce/dev-mcelog.c",
    "arch/x86/kernel/cpu/mce/genpool.c",
    "arch/x86/mm/fault.c",
    "arch/x86/kernel/traps.c",
    "arch/x86/kernel/nmi.c",
    "drivers/edac/edac_mc.c",
    "drivers/edac/edac_device.c",
    "drivers/edac/edac_pci_sysfs.c",
    "drivers/edac/ghes_edac.c",
    "drivers/edac/mce_amd.c",
    "drivers/edac/skx_common.c",
    "drivers/edac/skx_base.c",
    "drivers/edac/i10nm_base.c",
    "drivers/edac/sb_edac.c",
    "drivers/edac/amd64_edac.c",
    "drivers/acpi/apei/ghes.c",
    "drivers/firmware/efi/cper.c",
    "drivers/firmware/efi/cper-x86.c",
    "drivers/pci/pcie/aer.c",
    "drivers/pci/pcie/err.c",
    "drivers/pci/pcie/dpc.c",
    "drivers/pci/pcie/edr.c",
    "drivers/pci/hotplug/pciehp_ctrl.c",
    "drivers/pci/hotplug/pciehp_hpc.c",
    "kernel/hung_task.c",
    "kernel/watchdog.c",
    "kernel/watchdog_hld.c",
    "kernel/rcu/tree_stall.h",
    "kernel/panic.c",
    "kernel/cgroup/pids.c",
    "fs/file_table.c",
)

_LEVELS = ("emerg", "alert", "crit", "err", "warn", "notice", "info")
KERN_LEVEL: dict[str, str] = {
    "KERN_EMERG": "emerg",
    "KERN_ALERT": "alert",
    "KERN_CRIT": "crit",
    "KERN_ERR": "err",
    "KERN_WARNING": "warn",
    "KERN_NOTICE": "notice",
    "KERN_INFO": "info",
    "KERN_DEFAULT": "default",
    "KERN_CONT": "cont",
}
GLOBAL_MACROS: dict[str, str] = {
    "HW_ERR": "[Hardware Error]: ",
    "FW_BUG": "[Firmware Bug]: ",
    "FW_WARN": "[Firmware Warn]: ",
    "FW_INFO": "[Firmware Info]: ",
    "EDAC_MC": "MC",
    "EDAC_PCI": "PCI",
    **{name: f"\x00{level}\x00" for name, level in KERN_LEVEL.items()},
}
_SUFFIXES = ("", "_ratelimited", "_once", "_deferred")
PR_CALLS: dict[str, str] = {
    f"pr_{level}{suffix}": level for level in (*_LEVELS, "warning") for suffix in _SUFFIXES
}
PR_CALLS.update({"pr_cont": "cont"})
DEV_CALLS: dict[str, str] = {
    f"{kind}_{level}{suffix}": level
    for kind in ("dev", "pci")
    for level in _LEVELS
    for suffix in ("", "_ratelimited", "_once")
}
PRINTK_CALLS = ("printk", "printk_ratelimited", "printk_deferred", "printk_once", "vprintk")
EDAC_CALLS: dict[str, tuple[int, str]] = {
    # call -> (index of the format argument, the prefix the macro prints before it)
    "edac_printk": (2, "EDAC {1}: "),
    "edac_mc_printk": (2, "EDAC MC%d: "),
    "edac_mc_chipset_printk": (3, "EDAC {2} MC%d: "),
    "edac_device_printk": (2, "EDAC DEVICE%d: "),
    "edac_pci_printk": (2, "EDAC PCI%d: "),
}
WARN_CALLS = ("WARN", "WARN_ONCE", "WARN_RATELIMIT", "WARN_TAINT", "WARN_TAINT_ONCE")
# Severities whose verdict ends in a panic or kills the process that touched the memory.
FATAL_SEVERITIES = ("PANIC", "AR", "UC")
HW_ERR_MACHINE_CHECK = "[Hardware Error]: Machine check: "
_KERNEL_P = re.compile(r"%\*?p[A-Za-z]+")
_LEVEL_MARK = re.compile(r"\x00(\w+)\x00")
_LEVEL_ESCAPE = re.compile(r"\x01[0-7c]")


def _macros(source: str, path: Path) -> dict[str, str]:
    macros = dict(GLOBAL_MACROS)
    macros["KBUILD_MODNAME"] = path.stem
    macros.update(string_macros(source))
    return macros


def _clean(text: str) -> tuple[str, str | None]:
    """The text without printk level markers, and the level a marker gave."""
    level = None
    found = _LEVEL_MARK.search(text)
    if found:
        level = found.group(1)
    text = _LEVEL_MARK.sub("", text)
    text = _LEVEL_ESCAPE.sub("", text)
    return _KERNEL_P.sub("%s", text), level


def _messages_of(root: Path, relative: str, release: str) -> list[Message]:
    path = root / relative
    if not path.is_file():
        return []
    source = path.read_text(encoding="utf-8", errors="replace")
    macros = _macros(source, path)
    pr_prefix = define_string(source, "pr_fmt").get("pr_fmt", "")
    dev_prefix = define_string(source, "dev_fmt").get("dev_fmt", pr_prefix)
    out: list[Message] = []

    def add(text: str, level: str, line: int, function: str) -> None:
        text, marked = _clean(text)
        text = text.rstrip("\n")
        if not text.strip() or not re.search(r"[A-Za-z]{3}", text):
            return
        out.append(
            Message(
                emitter=EMITTER,
                release=release,
                text=text,
                style="printf" if "%" in text else "literal",
                file=relative,
                line=line,
                level=marked or level,
                function=function,
            )
        )

    for call in find_calls(source, PR_CALLS, format_arg=dict.fromkeys(PR_CALLS, 0), macros=macros):
        level = PR_CALLS[call.name].replace("warning", "warn")
        prefix = "" if level == "cont" else pr_prefix
        add(prefix + call.text, level, call.line, call.function)
    for call in find_calls(
        source, DEV_CALLS, format_arg=dict.fromkeys(DEV_CALLS, 1), macros=macros
    ):
        add("%s %s: " + dev_prefix + call.text, DEV_CALLS[call.name], call.line, call.function)
    for call in find_calls(source, ("pci_printk", "dev_printk"), macros=macros):
        text = literal_value(call.args[2], macros) if len(call.args) > 2 else None
        if text is not None:
            level = KERN_LEVEL.get(call.args[0].strip(), "default")
            add("%s %s: " + dev_prefix + text, level, call.line, call.function)
    for call in find_calls(
        source, PRINTK_CALLS, format_arg=dict.fromkeys(PRINTK_CALLS, 0), macros=macros
    ):
        add(call.text, "default", call.line, call.function)
    for call in find_calls(source, EDAC_CALLS, macros=macros):
        index, prefix = EDAC_CALLS[call.name]
        level_arg = call.args[1 if call.name != "edac_printk" else 0].strip()
        fmt = call.args[index] if index < len(call.args) else ""
        text = literal_value(fmt, macros)
        if text is None:
            continue
        if "{1}" in prefix or "{2}" in prefix:
            slot = 1 if "{1}" in prefix else 2
            name = literal_value(call.args[slot], macros)
            prefix = prefix.replace(f"{{{slot}}}", name if name is not None else "%s")
        add(prefix + text, KERN_LEVEL.get(level_arg, "default"), call.line, call.function)
    for call in find_calls(
        source, WARN_CALLS, format_arg=dict.fromkeys(WARN_CALLS, 1), macros=macros
    ):
        add(call.text, "warn", call.line, call.function)
    for call in find_calls(source, ("panic",), format_arg={"panic": 0}, macros=macros):
        add("Kernel panic - not syncing: " + call.text, "emerg", call.line, call.function)
    for call in find_calls(source, ("mce_panic",), format_arg={"mce_panic": 0}, macros=macros):
        add("Kernel panic - not syncing: " + call.text, "emerg", call.line, call.function)
    return out


def _severity_table(root: Path, release: str) -> list[Message]:
    path = root / "arch/x86/kernel/cpu/mce/severity.c"
    if not path.is_file():
        return []
    source = path.read_text(encoding="utf-8", errors="replace")
    out = []
    # The grader's verdicts, printed by mce_panic() as "Machine check: <msg>".
    table = re.compile(
        r'MCESEV\(\s*(?P<sev>\w+)\s*,\s*"(?P<msg>[^"\n]*)"|panic_msg\s*=\s*"(?P<amd>[^"\n]*)"'
    )
    for found in table.finditer(source):
        severity = found.group("sev") or "PANIC"
        out.append(
            Message(
                emitter=EMITTER,
                release=release,
                text=HW_ERR_MACHINE_CHECK + (found.group("msg") or found.group("amd")),
                style="literal",
                file="arch/x86/kernel/cpu/mce/severity.c",
                line=source.count("\n", 0, found.start()) + 1,
                level="emerg" if severity in FATAL_SEVERITIES else "warn",
                function=f"MCE_{severity}_SEVERITY",
            )
        )
    return out


def extract(checkout: Path, release: str) -> list[Message]:
    found: list[Message] = []
    for relative in FILES:
        found.extend(_messages_of(checkout, relative, release))
    found.extend(_severity_table(checkout, release))
    return sorted(set(found))
