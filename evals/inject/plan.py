"""The plan of one injected run: what the harness decided and every rank must know.

The harness resolves a scenario and a seed into a `Plan`, writes it as JSON into the run
directory, and passes its path to each rank (`--plan`). Ranks read it back with `Plan.load`.
Only plain values travel, so the worker needs nothing from the harness but this file.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class Plan:
    scenario: str
    seed: int
    fault: str
    # Processes started; `declared_world_size` is what the job is told (differs only when the
    # scenario launches the wrong number of processes).
    world_size: int
    declared_world_size: int
    fault_rank: int | None
    fault_step: int
    steps: int
    gloo_timeout_s: int
    master_port: int
    run_dir: str
    # Per-rank log files name the rank; interleaved output needs it in the message.
    log_rank_in_message: bool = False
    num_workers: int = 0
    flight_recorder: bool = False
    # Seconds without training progress before a rank dumps its Flight Recorder buffer.
    stall_dump_after_s: float = 8.0
    checkpoint_step: int | None = None
    checkpoint_to_file_object: bool = False
    detect_anomaly: bool = False
    memory_limit_bytes: int | None = None
    open_files_limit: int | None = None

    @property
    def progress_dir(self) -> Path:
        """Where ranks report (step, pid) for the harness's timing; never part of a case."""
        return Path(self.run_dir) / "progress"

    @property
    def flight_recorder_dir(self) -> Path:
        return Path(self.run_dir) / "fr"

    @property
    def dump_request_flag(self) -> Path:
        """Touched by the first rank that dumps, so its peers dump too."""
        return Path(self.run_dir) / "progress" / "fr-dump-requested"

    @property
    def data_dir(self) -> Path:
        return Path(self.run_dir) / "data"

    @property
    def checkpoint_dir(self) -> Path:
        return Path(self.run_dir) / "checkpoints"

    @property
    def site_dir(self) -> Path:
        """Packages installed on every 'node' but the faulty rank's (dependency scenarios)."""
        return Path(self.run_dir) / "site"

    def dump(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=2, sort_keys=True) + "\n")

    @classmethod
    def load(cls, path: Path) -> Plan:
        return cls(**json.loads(Path(path).read_text()))
