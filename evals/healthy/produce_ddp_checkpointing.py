"""Produces ddp-checkpointing/: a healthy 4-rank Gloo DDP run that saves checkpoints.

Every rank logs its steps; every 4 steps the job saves a sharded checkpoint with
torch.distributed.checkpoint (DCP) and rank 0 a consolidated torch.save copy, then reloads the
last one to check it. Nothing fails. Run from the repository root:
    MASTER_ADDR=127.0.0.1 .venv/bin/python -m torch.distributed.run --nproc-per-node 4 \\
        --tee 3 evals/healthy/produce_ddp_checkpointing.py /tmp/ckpt \\
        > evals/healthy/ddp-checkpointing/launcher.log 2>&1
"""

import logging
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")


def main() -> None:
    root = Path(sys.argv[1])
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8))
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
    for step in range(12):
        inputs = torch.randn(16, 64)
        loss = torch.nn.functional.cross_entropy(ddp(inputs), torch.randint(0, 8, (16,)))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        log.info("step %d loss %.4f", step, loss.item())
        if (step + 1) % 4 == 0:
            started = time.perf_counter()
            target = root / f"step-{step + 1:06d}"
            dcp.save({"model": model.state_dict()}, checkpoint_id=str(target / "sharded"))
            if rank == 0:
                torch.save({"model": model.state_dict(), "step": step + 1}, target / "model.pt")
            dist.barrier()
            restored = {"model": model.state_dict()}
            dcp.load(restored, checkpoint_id=str(target / "sharded"))
            log.info(
                "saved checkpoint step %d to %s in %.2fs and verified it",
                step + 1,
                target,
                time.perf_counter() - started,
            )
    dist.destroy_process_group()
    log.info("training finished")


if __name__ == "__main__":
    main()
