"""What the probe costs a real loop: the plain loop of `plain_loop.py` (ampbench's GPT at
nanoGPT's `shakespeare-char` size on a GPU, its tiny twin on the CPU) timed in interleaved
windows with the probe (census off) and without it (its hooks removed), and the census's own
cost on the same gradients.

    python examples/own_loop/overhead.py --rounds 10 --window 50 --out runs/overhead

Each window is `--window` steps between two clock marks, with one synchronize after it (CUDA
events on a GPU); rounds alternate which side runs first. The verdict is the rounds verdict of
the probed windows' per-step time against the bare ones' (the rounds verdict `compare` gives):
the ratio, its interval and whether the data can tell them apart. Writes overhead.json and
overhead.md under --out, and the probe's own run folder (its probed steps) in --out/probe_run.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import torch

import bench
from bench.data.sources import generator, get
from bench.measure.timing import clock_for
from bench.ownloop import census
from bench.publish.own_loop import rounds_verdict  # where the driver imports it from
from bench.recipes.modes import MODES
from bench.verdicts.defaults import CONFIDENCE
from bench.workloads import gpt

try:
    from plain_loop import build  # run as a script: its folder is on the path
except ImportError:  # imported as examples.own_loop.overhead
    from examples.own_loop.plain_loop import build


def main() -> None:
    cuda = torch.cuda.is_available()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="shakespeare-char" if cuda else "shakespeare-tiny")
    p.add_argument("--batch-size", type=int, default=64 if cuda else 4)
    p.add_argument("--mode", default="bf16-amp" if cuda else "fp32")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--window", type=int, default=50, help="steps per timed window")
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--censuses", type=int, default=5, help="census calls timed on their own")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    device = "cuda" if cuda else "cpu"
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    mode = MODES[a.mode]
    model, optimizer = build(device, a.preset, 0, 1e-3)
    text, context = get("shakespeare"), gpt.PRESETS[a.preset].context
    gen = generator(device, 0)
    scaler = mode.scaler(device)
    # Batches made before the windows: drawing them is the same work on both sides, left out.
    batches = [text.train_batch(a.batch_size, context, gen, device) for _ in range(a.window)]

    def step(x: torch.Tensor, y: torch.Tensor) -> None:
        with mode.context(device, forward=True):
            loss = gpt.loss(model(x), y)
        with mode.context(device):
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)

    probe = bench.probe(
        model, optimizer, scaler=scaler, census=False, every=10**9, warmup=0,
        out=out / "probe_run",
    )  # fmt: skip
    clock = clock_for(device)

    def window(probed: bool) -> float:
        if probed:
            probe.attach()
        else:
            probe.detach()
        start = clock.mark()
        for x, y in batches:
            if probed:
                with probe.step():
                    step(x, y)
            else:
                step(x, y)
        end = clock.mark()
        clock.finish()  # the one synchronize, after the window
        return clock.elapsed_ms(start, end) / len(batches)

    for _ in range(max(1, a.warmup // a.window)):
        window(False)
        window(True)
    bare, probed = [], []
    for k in range(a.rounds):
        for side in (False, True) if k % 2 == 0 else (True, False):
            (probed if side else bare).append(window(side))
    probe.close()

    # The census on the same model's gradients, after a backward: its own time each call.
    x, y = batches[0]
    with mode.context(device, forward=True):
        loss = gpt.loss(model(x), y)
    loss.backward()
    census_ms = [census.take(model, 0)[1] for _ in range(a.censuses)]
    verdict = rounds_verdict(bare, probed)
    step_ms = statistics.median(bare)
    result = {
        "device": torch.cuda.get_device_name() if cuda else "cpu", "preset": a.preset,
        "batch_size": a.batch_size, "mode": a.mode, "rounds": a.rounds, "window_steps": a.window,
        "bare_step_ms": bare, "probed_step_ms": probed, "verdict": verdict,
        "census_ms": census_ms, "census_ms_median": statistics.median(census_ms),
        "census_share_of_a_step": statistics.median(census_ms) / step_ms,
    }  # fmt: skip
    (out / "overhead.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        f"# The probe's overhead on {result['device']}: {a.preset}, batch {a.batch_size}, {a.mode}",
        "",
        f"{a.rounds} rounds of {a.window} steps a side, interleaved; census off.",
        "",
        f"- step without the probe: {step_ms:.4g} ms (median of the windows)",
        f"- with the probe over without: {verdict['ratio']:.4g}, {CONFIDENCE:.0%} interval "
        f"[{verdict['ratio_lo']:.4g}, {verdict['ratio_hi']:.4g}]: {verdict['verdict']}",
        f"- one census of every gradient: {result['census_ms_median']:.4g} ms, "
        f"{result['census_share_of_a_step']:.4g} steps' time; every 200 steps that is "
        f"{result['census_share_of_a_step'] / 200:.3%} of the run",
        "",
    ]
    (out / "overhead.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
