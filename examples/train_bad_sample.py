"""The training script behind examples/torchrun-bad-sample: 4 Gloo ranks, one bad sample.

Rank 3's shard holds a sample whose token ids exceed the vocabulary; the embedding lookup raises
IndexError on that rank while the other three wait for it in DDP's gradient all-reduce. Run:
    MASTER_ADDR=127.0.0.1 torchrun --nproc-per-node 4 --log-dir logs --redirects 3 --tee 3 \
        examples/train_bad_sample.py > launcher.log 2>&1
"""

import logging
import time

import torch
import torch.distributed as dist

VOCAB, BAD_STEP, BAD_RANK = 1000, 7, 3

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")


def batch(step: int, rank: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(step * 100 + rank)
    tokens = torch.randint(0, VOCAB, (8, 32), generator=generator)
    if step == BAD_STEP and rank == BAD_RANK:
        tokens[5, 17] = VOCAB + 23  # a corrupt sample from a bad shard
    return tokens


def main() -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = torch.nn.Sequential(torch.nn.Embedding(VOCAB, 64), torch.nn.Linear(64, VOCAB))
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
    log.info("rank %d of %d ready", rank, dist.get_world_size())
    for step in range(20):
        tokens = batch(step, rank)
        logits = ddp(tokens)
        loss = torch.nn.functional.cross_entropy(logits.view(-1, VOCAB), tokens.view(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        log.info("step %d loss %.4f", step, loss.item())
        time.sleep(0.2)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
