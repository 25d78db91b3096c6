"""A plain PyTorch training loop, nanoGPT's shape, measured by `bench.probe`: ampbench's GPT at
nanoGPT's `shakespeare-char` size (on the CPU its tiny twin) learning the bundled Shakespeare
text by characters, with a held-out loss every `--eval-every` steps.

    python examples/own_loop/plain_loop.py --steps 500                 # one run, measured
    ./run_bench.sh sweep -- python examples/own_loop/plain_loop.py   # every mode, 3 seeds

The mode is written once: `probe.autocast()` around the forward and `probe.scaler()` for the
loss scale. Alone they change nothing (float32, a disabled scaler); under `ampbench sweep` they
apply the mode the driver asks for (AMPBENCH_MODE).
"""

from __future__ import annotations

import argparse

import torch

import bench
from bench.data.sources import generator, get
from bench.ownloop import contract
from bench.ownloop.probe import Probe
from bench.workloads import gpt


def build(device: str, preset: str, seed: int, lr: float) -> tuple[gpt.GPT, torch.optim.Optimizer]:
    size = gpt.PRESETS[preset]
    model = gpt.build(size, device, seed)
    # nanoGPT's AdamW settings for this model; fused on a GPU.
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=lr, betas=(0.9, 0.99), fused=device == "cuda"
    )
    return model, optimizer


@torch.no_grad()
def evaluate(model: torch.nn.Module, batches: list, probe: Probe) -> torch.Tensor:
    model.eval()
    total = torch.zeros((), device=batches[0][0].device)
    for x, y in batches:
        with probe.autocast():
            total += gpt.loss(model(x), y).float()
    model.train()
    return total / len(batches)


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
    p.add_argument("--no-census", action="store_true")
    p.add_argument("--out", default=None, help="the run folder (AMPBENCH_OUT under the driver)")
    a = p.parse_args()
    device = "cuda" if cuda else "cpu"
    seed = contract.seed()
    model, optimizer = build(device, a.preset, seed, a.lr)
    text = get("shakespeare")
    context = gpt.PRESETS[a.preset].context
    held = text.heldout(context, a.batch_size, device)[: a.eval_batches]
    gen = generator(device, seed)

    probe = bench.probe(model, optimizer, every=a.every, out=a.out, census=not a.no_census)
    scaler = probe.scaler()
    # Before training too: the training judge asks that fp32's best is well below its first.
    probe.log(val_loss=evaluate(model, held, probe))
    for step in range(a.steps):
        x, y = text.train_batch(a.batch_size, context, gen, device)
        with probe.step():
            with probe.autocast():
                loss = gpt.loss(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
        probe.log(loss=loss.detach())  # a tensor: read when the folder is written, not now
        if (step + 1) % a.eval_every == 0 or step + 1 == a.steps:
            probe.log(val_loss=evaluate(model, held, probe))
    probe.close()
    print(probe.folder)


if __name__ == "__main__":
    main()
