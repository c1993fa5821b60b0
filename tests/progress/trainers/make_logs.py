"""Runs real trainers on CPU and keeps what they print, as the progress fixtures beside this file.

Each scenario trains a tiny model for a few dozen steps with the trainer's own logging and
progress bar, its stdout and stderr captured together as a job's log file holds them:

    cd tests/progress/trainers
    python make_logs.py hf_trainer > hf_trainer.log 2>&1
    python make_logs.py lightning > lightning.log 2>&1
    OMP_NUM_THREADS=1 torchrun --nproc_per_node 2 make_logs.py accelerate > accelerate.log 2>&1

transformers and torch are the project's own dependencies; lightning and accelerate are not,
so the last two need them installed. The logs here were made with torch 2.13.0+cpu,
transformers 5.25.0, lightning 2.6.6 and accelerate 1.16.0.
Nothing here is imported by the tests: they read the logs.
"""

from __future__ import annotations

import logging
import sys
import tempfile

import torch
from torch import nn

STEPS = 40


def _data(n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 16, generator=generator)
    weights = torch.randn(16, 1, generator=generator)
    return x, x @ weights + 0.1 * torch.randn(n, 1, generator=generator)


def hf_trainer() -> None:
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

    torch.manual_seed(0)
    model = GPT2LMHeadModel(
        GPT2Config(
            vocab_size=64,
            n_positions=32,
            n_embd=32,
            n_layer=2,
            n_head=2,
            bos_token_id=0,
            eos_token_id=0,
        )
    )
    ids = torch.randint(0, 64, (256, 32), generator=torch.Generator().manual_seed(0))
    dataset = [{"input_ids": row, "labels": row} for row in ids]
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(
            output_dir=out,
            max_steps=STEPS,
            per_device_train_batch_size=8,
            logging_steps=2,
            learning_rate=1e-3,
            report_to=[],
            save_strategy="no",
            use_cpu=True,
        )
        Trainer(model=model, args=args, train_dataset=dataset).train()


def lightning() -> None:
    import lightning as L
    from lightning.pytorch.callbacks import TQDMProgressBar
    from torch.utils.data import DataLoader, TensorDataset

    class Regression(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))

        def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> torch.Tensor:
            x, y = batch
            loss = nn.functional.mse_loss(self.net(x), y)
            self.log("train_loss", loss, prog_bar=True)
            return loss

        def configure_optimizers(self) -> torch.optim.Optimizer:
            return torch.optim.SGD(self.parameters(), lr=0.01)

    L.seed_everything(0)
    x, y = _data(640)
    with tempfile.TemporaryDirectory() as out:
        trainer = L.Trainer(
            max_epochs=2,
            accelerator="cpu",
            devices=1,
            default_root_dir=out,
            logger=False,
            enable_checkpointing=False,
            log_every_n_steps=1,
            # The tqdm bar, which a job's log file gets update by update; Rich's bar, the default
            # where rich is installed, prints only its final state when the output is a file.
            callbacks=[TQDMProgressBar()],
        )
        trainer.fit(Regression(), DataLoader(TensorDataset(x, y), batch_size=32))


def accelerate() -> None:
    from accelerate import Accelerator
    from accelerate.logging import get_logger
    from torch.utils.data import DataLoader, TensorDataset

    logging.basicConfig(
        format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
        datefmt="%m/%d/%Y %H:%M:%S",
        level=logging.INFO,
    )
    logger = get_logger("train")
    accelerator = Accelerator(cpu=True)
    torch.manual_seed(0)
    x, y = _data(1280)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(TensorDataset(x, y), batch_size=16)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    logger.info(accelerator.state, main_process_only=False)
    for step, (inputs, targets) in enumerate(loader):
        loss = nn.functional.mse_loss(model(inputs), targets)
        accelerator.backward(loss)
        grad_norm = accelerator.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
        # A progress line of the usual shape, on every process: Accelerate's logger says which
        # process printed it (`[RANK n]`).
        logger.info(
            f"step {step} loss {loss.item():.4f} "
            f"grad_norm {grad_norm.item():.4f} lr {optimizer.param_groups[0]['lr']}",
            main_process_only=False,
        )
        if step + 1 == STEPS:
            break
    accelerator.end_training()


if __name__ == "__main__":
    {"hf_trainer": hf_trainer, "lightning": lightning, "accelerate": accelerate}[sys.argv[1]]()
