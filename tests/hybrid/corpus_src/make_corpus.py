"""Regenerates tests/hybrid/corpus: real torchrun jobs on Gloo, one injected fault each.

    .venv/bin/python tests/hybrid/corpus_src/make_corpus.py [--only CASE ...]

Each case directory holds what the job printed, exactly as printed (`launcher.log`, and per-rank
`logs/` when the case uses torchrun's --log-dir), plus `expected.json` in the layout of
evals/corpus. Labels follow docs/taxonomy.md; they are fixed here, not read from the output.
Takes about 10 s per case on two cores (the stalled-rank cases wait for the 10 s Gloo timeout).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "corpus"
SCRIPT = HERE / "faulty_train.py"


@dataclass(frozen=True)
class Case:
    name: str
    fault: str
    failure_class: str | None
    category: str | None
    rank: int
    variant: int = 0
    nproc: int = 2
    step: int = 3
    per_rank_logs: bool = False


CASES = [
    Case("exc-keyerror", "python_exception", "python_exception", "application_bug", 1, 0),
    Case("exc-assert", "python_exception", "python_exception", "application_bug", 0, 1, 3, 2, True),
    Case("exc-zerodiv", "python_exception", "python_exception", "application_bug", 2, 2, 3),
    Case("shape-matmul", "shape_mismatch", "shape_or_dtype_error", "application_bug", 1, 0),
    Case(
        "shape-broadcast",
        "shape_mismatch",
        "shape_or_dtype_error",
        "application_bug",
        0,
        1,
        3,
        4,
        True,
    ),
    Case("shape-dtype", "shape_mismatch", "shape_or_dtype_error", "application_bug", 2, 2, 3),
    Case("nan-anomaly", "nan_loss", "nan_or_inf", "ml_numerical", 1, 0),
    Case("nan-check", "nan_loss", "nan_or_inf", "ml_numerical", 0, 1, 3, 2, True),
    Case("inf-check", "nan_loss", "nan_or_inf", "ml_numerical", 2, 2, 3),
    Case(
        "ckpt-size", "checkpoint_mismatch", "checkpoint_mismatch", "environment_configuration", 1, 0
    ),
    Case(
        "ckpt-missing",
        "checkpoint_mismatch",
        "checkpoint_mismatch",
        "environment_configuration",
        0,
        1,
        3,
        2,
        True,
    ),
    Case(
        "ckpt-unexpected",
        "checkpoint_mismatch",
        "checkpoint_mismatch",
        "environment_configuration",
        2,
        2,
        3,
    ),
    Case("data-missing", "missing_data", "corrupt_or_missing_data", "data_pipeline", 1, 0),
    Case(
        "data-truncated",
        "missing_data",
        "corrupt_or_missing_data",
        "data_pipeline",
        0,
        1,
        3,
        2,
        True,
    ),
    Case("data-badjson", "missing_data", "corrupt_or_missing_data", "data_pipeline", 2, 2, 3),
    Case("worker-sigkill", "dataloader_worker", "dataloader_worker_died", "data_pipeline", 1, 0),
    Case(
        "worker-sigsegv",
        "dataloader_worker",
        "dataloader_worker_died",
        "data_pipeline",
        0,
        1,
        3,
        2,
        True,
    ),
    Case("worker-exit", "dataloader_worker", "dataloader_worker_died", "data_pipeline", 1, 2, 3),
    Case("stall-rank1", "stall", "collective_timeout", "distributed_communication", 1, 0),
    Case(
        "stall-rank0", "stall", "collective_timeout", "distributed_communication", 0, 0, 3, 2, True
    ),
    Case("stall-rank2", "stall", "collective_timeout", "distributed_communication", 2, 0, 3),
    Case("killed-rank1", "killed", "process_killed", "scheduler_infrastructure", 1, 0),
    Case("killed-rank0", "killed", "process_killed", "scheduler_infrastructure", 0, 0, 3, 2, True),
    Case("killed-rank2", "killed", "process_killed", "scheduler_infrastructure", 2, 0, 3, 5),
    Case("segv-rank1", "native_crash", "native_crash", "application_bug", 1, 0),
    Case("abort-rank0", "native_crash", "native_crash", "application_bug", 0, 1, 3, 2, True),
    Case("segv-rank2", "native_crash", "native_crash", "application_bug", 2, 0, 3, 5),
    Case("poisoned-sample", "poisoned_sample", "data_preprocessing_error", "data_pipeline", 1, 0),
    Case("clean", "none", None, None, -1, 0, 2),
]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run_case(case: Case) -> None:
    target = CORPUS / case.name
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    env = {
        **os.environ,
        "MASTER_ADDR": "127.0.0.1",
        "DENPEX_FAULT": case.fault,
        "DENPEX_FAULT_RANK": str(case.rank),
        "DENPEX_FAULT_STEP": str(case.step),
        "DENPEX_VARIANT": str(case.variant),
    }
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc-per-node",
        str(case.nproc),
        "--master-addr",
        "127.0.0.1",
        "--master-port",
        str(free_port()),
    ]
    if case.per_rank_logs:
        command += ["--log-dir", "logs", "--redirects", "3"]
    else:
        command += ["--tee", "3"]
    with tempfile.TemporaryDirectory() as scratch:
        shutil.copy(SCRIPT, Path(scratch) / "train.py")
        with (target / "launcher.log").open("wb") as out:
            subprocess.run(
                [*command, "train.py"],
                cwd=scratch,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=180,
                check=False,
            )
        if case.per_rank_logs:
            shutil.copytree(Path(scratch) / "logs", target / "logs")
    expected = {
        "case": case.name,
        "scenario": case.fault,
        "expect_failure": case.failure_class is not None,
        "failure_class": case.failure_class,
        "category": case.category,
        "originating_rank": case.rank if case.rank >= 0 else None,
        "launcher": "torchrun",
        "world_size": case.nproc,
        "simulated": [],
        "source": "generated by tests/hybrid/corpus_src/make_corpus.py on torch 2.13.0+cpu (Gloo)",
        "notes": f"fault {case.fault} variant {case.variant} on rank {case.rank} at step "
        f"{case.step}",
    }
    (target / "expected.json").write_text(json.dumps(expected, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="case names to regenerate")
    args = parser.parse_args()
    for case in CASES:
        if args.only and case.name not in args.only:
            continue
        print(f"{case.name} ...", flush=True)
        run_case(case)


if __name__ == "__main__":
    main()
