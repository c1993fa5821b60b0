"""Launch an injected job with `torch.multiprocessing.spawn` instead of torchrun.

Consumes `--plan run/plan.json`; starts `plan.world_size` processes, each given RANK,
WORLD_SIZE (the plan's declared size), LOCAL_RANK, MASTER_ADDR and MASTER_PORT, and runs
`evals.inject.worker.run` in each. The children share this process's stdout and stderr, and a
failed child surfaces here as spawn's own exception, as it does in scripts launched this way.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import torch.multiprocessing as mp

from evals.inject import worker
from evals.inject.plan import Plan


def _run_rank(index: int, plan: Plan) -> None:
    os.environ.update(
        {
            "RANK": str(index),
            "LOCAL_RANK": str(index),
            "WORLD_SIZE": str(plan.declared_world_size),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(plan.master_port),
        }
    )
    worker.run(plan)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--plan", type=Path, required=True)
    plan = Plan.load(parser.parse_args(argv).plan)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    mp.spawn(_run_rank, args=(plan,), nprocs=plan.world_size, join=True)


if __name__ == "__main__":
    main()
