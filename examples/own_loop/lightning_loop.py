"""A Lightning `Trainer` run measured by ampbench's callback: ampbench's GPT at nanoGPT's
`shakespeare-char` size (on the CPU its tiny twin) as a LightningModule, learning the bundled
Shakespeare text by characters, with a held-out `val_loss`.

    python examples/own_loop/lightning_loop.py --steps 500
    ./run_bench.sh sweep --metric val_loss -- python examples/own_loop/lightning_loop.py

`precision()` turns the driver's mode (AMPBENCH_MODE) into the Trainer's `precision=`;
alone it gives float32 (`32-true`). Needs Lightning: pip install -e '.[lightning]'.
"""

from __future__ import annotations

import argparse

import torch
from torch.utils.data import DataLoader, TensorDataset

from bench.data.sources import generator, get
from bench.ownloop import contract
from bench.ownloop.lightning import ProbeCallback, pl, precision
from bench.workloads import gpt


class CharGPT(pl.LightningModule):
    def __init__(self, preset: str, seed: int, lr: float) -> None:
        super().__init__()
        self.model = gpt.build(gpt.PRESETS[preset], "cpu", seed)
        self.lr = lr

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> torch.Tensor:
        x, y = batch
        return gpt.loss(self.model(x), y)

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> None:
        x, y = batch
        self.log("val_loss", gpt.loss(self.model(x), y))

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.parameters(), lr=self.lr, betas=(0.9, 0.99))


def main() -> None:
    cuda = torch.cuda.is_available()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="shakespeare-char" if cuda else "shakespeare-tiny")
    p.add_argument("--steps", type=int, default=500)
    p.add_argument("--batch-size", type=int, default=64 if cuda else 8)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--eval-every", type=int, default=100)
    p.add_argument("--eval-batches", type=int, default=20)
    p.add_argument("--every", type=int, default=200, help="the probe's memory and census period")
    p.add_argument("--out", default=None, help="the run folder (AMPBENCH_OUT under the driver)")
    a = p.parse_args()
    seed = contract.seed()
    torch.manual_seed(seed)
    text = get("shakespeare")
    context = gpt.PRESETS[a.preset].context
    x, y = text.train_batch(a.steps * a.batch_size, context, generator("cpu", seed), "cpu")
    held = text.heldout(context, a.batch_size, "cpu")[: a.eval_batches]
    hx, hy = torch.cat([h[0] for h in held]), torch.cat([h[1] for h in held])
    trainer = pl.Trainer(
        max_steps=a.steps, precision=precision(), accelerator="gpu" if cuda else "cpu",
        devices=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False, num_sanity_val_steps=0, val_check_interval=a.eval_every,
        callbacks=[ProbeCallback(every=a.every, out=a.out)],
    )  # fmt: skip
    trainer.fit(
        CharGPT(a.preset, seed, a.lr),
        DataLoader(TensorDataset(x, y), batch_size=a.batch_size),
        DataLoader(TensorDataset(hx, hy), batch_size=a.batch_size),
    )


if __name__ == "__main__":
    main()
