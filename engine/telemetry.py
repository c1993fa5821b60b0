"""What the host can tell about a job while `denpex run` runs it, and when it ends.

Consumes the bundle folder, the child's environment and a sampling interval; produces in the
bundle: `telemetry.jsonl` (one sample per interval: host memory pressure from
/proc/pressure/memory and /proc/meminfo, and per-GPU readings from `nvidia-smi` and `dcgmi`
when they are installed), `dmesg.log` (the kernel log's tail at the end, where Xid, AER and OOM
lines are) and `host.json` (each tool: ok, missing or failed, never assumed healthy; the
scheduler's identifiers; the Flight Recorder settings). `flight_recorder_environment` turns on
Flight Recorder dumps on timeout for the child, keeping every setting the user made.

Read back (`TelemetryReader`, in the scan's one pass over each input; `host_telemetry`, when
the evidence is assembled): the samples and the tools' states, as plain data that the
diagnosis's telemetry checks (`denpex.silent.host`) read.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

NVIDIA_SMI_QUERY = (
    "index,pci.bus_id,utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw,"
    "clocks.sm,clocks_throttle_reasons.active,ecc.errors.uncorrected.volatile.total"
)
DCGM_FIELDS = "150,155,203,230"
"""GPU temperature, power, utilisation and the last Xid (DCGM field ids)."""
TOOL_TIMEOUT_S = 10.0
KERNEL_LOG_LINES = 5000
XID = re.compile(r"NVRM: Xid \(")
SCHEDULER_PREFIXES = ("SLURM_", "TORCHELASTIC_", "PBS_", "LSB_")
SCHEDULER_NAMES = (
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "GROUP_RANK",
    "HOSTNAME",
    "KUBERNETES_SERVICE_HOST",
    # The Kubernetes downward API's usual names (fieldRef metadata.name, spec.nodeName, ...).
    "POD_NAME",
    "POD_NAMESPACE",
    "POD_UID",
    "POD_IP",
    "NODE_NAME",
    "JOB_COMPLETION_INDEX",
)
# Each Flight Recorder setting with its older name; a setting under either name is the user's.
FLIGHT_RECORDER = (
    (("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE"), "2000"),
    (("TORCH_NCCL_DUMP_ON_TIMEOUT",), "1"),
)
FLIGHT_RECORDER_FILE = ("TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE")


def scheduler_identifiers(environment: Mapping[str, str]) -> dict[str, str]:
    return {
        k: v
        for k, v in sorted(environment.items())
        if k in SCHEDULER_NAMES or k.startswith(SCHEDULER_PREFIXES)
    }


def flight_recorder_environment(
    environment: Mapping[str, str], bundle: Path
) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """(the child's environment, what denpex set, what the user had set and was kept)."""
    child = dict(environment)
    added: dict[str, str] = {}
    kept: dict[str, str] = {}
    settings = [*FLIGHT_RECORDER, (FLIGHT_RECORDER_FILE, str(bundle / "fr" / "fr_trace_rank_"))]
    for names, value in settings:
        users = {n: environment[n] for n in names if n in environment}
        if users:
            kept.update(users)
            continue
        for name in names:
            child[name] = added[name] = value
    if any(name in added for name in FLIGHT_RECORDER_FILE):
        (bundle / "fr").mkdir(parents=True, exist_ok=True)
    return child, added, kept


@dataclass
class ToolState:
    status: str = "not tried"
    detail: str = ""


def _run(command: list[str]) -> tuple[str | None, str]:
    """(stdout, '') when the tool ran and succeeded, else (None, why)."""
    if shutil.which(command[0]) is None:
        return None, "missing"
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, f"failed: {error}"
    if done.returncode != 0:
        return None, f"failed: exit {done.returncode}: {done.stderr.strip()[:200]}"
    return done.stdout, ""


def _pressure() -> dict[str, float] | None:
    try:
        text = Path("/proc/pressure/memory").read_text()
    except OSError:
        return None
    values = {}
    for line in text.splitlines():
        kind, *pairs = line.split()
        for pair in pairs:
            name, _, value = pair.partition("=")
            if name in ("avg10", "avg60", "total"):
                values[f"{kind}_{name}"] = float(value)
    return values


def _meminfo() -> dict[str, int] | None:
    try:
        text = Path("/proc/meminfo").read_text()
    except OSError:
        return None
    wanted = ("MemTotal", "MemAvailable", "SwapTotal", "SwapFree", "Shmem")
    values = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        if name in wanted and rest.split():
            values[f"{name}_kB"] = int(rest.split()[0])
    return values


@dataclass
class Sampler:
    """Samples the host every `interval` seconds until stopped, into the bundle."""

    bundle: Path
    interval: float = 10.0
    tools: dict[str, ToolState] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=TOOL_TIMEOUT_S * 3)

    def _note(self, tool: str, ok: bool, why: str) -> None:
        state = self.tools.setdefault(tool, ToolState())
        if ok:
            state.status, state.detail = "ok", ""
        elif state.status != "ok":
            state.status, state.detail = ("missing", "") if why == "missing" else ("failed", why)

    def sample(self) -> dict[str, object]:
        record: dict[str, object] = {
            "time": datetime.now(UTC).isoformat(),
            "host": socket.gethostname(),
        }
        for name, reader in (("memory_pressure", _pressure), ("meminfo", _meminfo)):
            value = reader()
            self._note(
                f"/proc/{'pressure/memory' if name == 'memory_pressure' else 'meminfo'}",
                value is not None,
                "missing",
            )
            if value is not None:
                record[name] = value
        smi, why = _run(
            ["nvidia-smi", f"--query-gpu={NVIDIA_SMI_QUERY}", "--format=csv,noheader,nounits"]
        )
        self._note("nvidia-smi", smi is not None, why)
        if smi is not None:
            keys = NVIDIA_SMI_QUERY.split(",")
            record["gpus"] = [
                dict(zip(keys, (v.strip() for v in row.split(",")), strict=False))
                for row in smi.strip().splitlines()
            ]
        dcgm, why = _run(["dcgmi", "dmon", "-e", DCGM_FIELDS, "-c", "1"])
        self._note("dcgmi", dcgm is not None, why)
        if dcgm is not None:
            record["dcgm"] = dcgm.strip().splitlines()[-16:]
        return record

    def _loop(self) -> None:
        with (self.bundle / "telemetry.jsonl").open("a", encoding="utf-8") as out:
            while True:
                out.write(json.dumps(self.sample()) + "\n")
                out.flush()
                if self._stop.wait(self.interval):
                    return

    def finish(self, environment: Mapping[str, str], flight_recorder: dict[str, object]) -> None:
        """The kernel log's tail and host.json, once the command has ended."""
        kernel, why = _run(["dmesg", "--time-format", "iso"])
        self._note("dmesg", kernel is not None, why)
        xids = 0
        if kernel is not None:
            lines = kernel.splitlines()[-KERNEL_LOG_LINES:]
            xids = sum(1 for line in lines if XID.search(line))
            (self.bundle / "dmesg.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
        host = {
            "host": socket.gethostname(),
            "tools": {n: {"status": s.status, "detail": s.detail} for n, s in self.tools.items()},
            "xid_lines": xids if kernel is not None else None,
            "scheduler": scheduler_identifiers(environment),
            "flight_recorder": flight_recorder,
            "note": "a tool that is missing or failed says nothing about the host's health",
        }
        (self.bundle / "host.json").write_text(json.dumps(host, indent=2) + "\n")


# --- read back -------------------------------------------------------------------------------

SAMPLES_FILE = "telemetry.jsonl"
HOST_FILE = "host.json"
HEAD_SAMPLES = 200
TAIL_SAMPLES = 1800
"""A long run's samples kept: its first and its last (the failure is near the end)."""
MAX_HOST_FILE_BYTES = 1024 * 1024


def is_host_file(name: str, head: bytes) -> bool:
    """Whether an input is what `Sampler.finish` wrote into a bundle."""
    return name == HOST_FILE and b'"tools"' in head[:4096]


class TelemetryReader:
    """The records of one `telemetry.jsonl` or `host.json`, fed its bytes as they are read."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._host = name == HOST_FILE
        self._buffer = bytearray()
        self._head: list[dict[str, object]] = []
        self._tail: deque[dict[str, object]] = deque(maxlen=TAIL_SAMPLES)

    def read(self, data: bytes, first_line: int) -> None:
        """`data`: whole lines not fed before, the first of them numbered `first_line`."""
        if self._host:
            if len(self._buffer) + len(data) <= MAX_HOST_FILE_BYTES:
                self._buffer += data
            return
        for offset, line in enumerate(data.split(b"\n")):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except ValueError:
                continue  # a line cut by the process's end
            if not isinstance(value, dict):
                continue
            record = {
                "line": first_line + offset,
                "sample": value,
                "text": line.decode("utf-8", "replace")[:2000],
            }
            if len(self._head) < HEAD_SAMPLES:
                self._head.append(record)
            else:
                self._tail.append(record)

    def records(self) -> list[dict[str, object]]:
        if self._host:
            try:
                value = json.loads(bytes(self._buffer))
            except ValueError:
                return []
            return [{"line": 1, "host_file": value}] if isinstance(value, dict) else []
        return [*self._head, *self._tail]


@dataclass(frozen=True)
class GpuSample:
    """One GPU's reading in one sample (nvidia-smi's CSV fields, as printed)."""

    index: str
    fields: Mapping[str, str]


@dataclass(frozen=True)
class HostSample:
    source: str
    line: int
    host: str | None
    time: str | None
    gpus: tuple[GpuSample, ...] | None
    """None when nvidia-smi gave nothing at this sample (missing, or it failed)."""
    meminfo: Mapping[str, int] = field(default_factory=dict)
    pressure: Mapping[str, float] = field(default_factory=dict)
    text: str = ""


@dataclass(frozen=True)
class ToolReport:
    source: str
    host: str | None
    tool: str
    status: str
    """ok, missing, failed, or not tried."""
    detail: str = ""


@dataclass(frozen=True)
class HostTelemetry:
    """What `denpex run` gathered on the hosts among the inputs."""

    samples: tuple[HostSample, ...] = ()
    tools: tuple[ToolReport, ...] = ()

    def not_gathered(self) -> list[str]:
        """One warning per tool that was missing or failed: what it would show is unknown."""
        said = []
        for tool in self.tools:
            if tool.status == "ok":
                continue
            detail = f" ({tool.detail})" if tool.detail else ""
            said.append(
                f"{tool.host or tool.source}: {tool.tool} was {tool.status}{detail} when "
                "denpex run sampled the host: what it would show is unknown, not healthy"
            )
        return said


def host_telemetry(
    inputs: Iterable[tuple[str, str | None, list[dict[str, object]]]],
) -> HostTelemetry:
    """The telemetry of (input name, the host its path names, its records) for every input."""
    samples: list[HostSample] = []
    tools: list[ToolReport] = []
    for name, path_host, records in inputs:
        for record in records:
            if "host_file" in record:
                document = record["host_file"]
                assert isinstance(document, dict)
                host = document.get("host") or path_host
                for tool, state in (document.get("tools") or {}).items():
                    if isinstance(state, dict):
                        tools.append(
                            ToolReport(
                                name,
                                host,
                                str(tool),
                                str(state.get("status", "not tried")),
                                str(state.get("detail", "")),
                            )
                        )
                continue
            sample = record.get("sample")
            if not isinstance(sample, dict):
                continue
            gpus = sample.get("gpus")
            samples.append(
                HostSample(
                    source=name,
                    line=int(record["line"]),  # type: ignore[call-overload]
                    host=sample.get("host") or path_host,
                    time=sample.get("time"),
                    gpus=tuple(
                        GpuSample(str(g.get("index", n)), {k: str(v) for k, v in g.items()})
                        for n, g in enumerate(gpus)
                        if isinstance(g, dict)
                    )
                    if isinstance(gpus, list)
                    else None,
                    meminfo=sample.get("meminfo") or {},
                    pressure=sample.get("memory_pressure") or {},
                    text=str(record.get("text", "")),
                )
            )
    return HostTelemetry(tuple(samples), tuple(tools))
