"""The Python calls a step makes with the probe (`time_every=10`, census off) and without it, on
the CPU with the tiny preset: a count, free of the timing noise of 2 shared cores. cProfile
over 50 steps of each side, after 200 steps of each; also the garbage collections in those
warm-up steps, by generation (count, ms).

Usage, from the repository root: `PYTHONPATH=. python scripts/probe_calls_cpu.py`.
"""

import cProfile
import gc
import pstats
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path("examples/own_loop").resolve()))

from plain_loop import build

import bench
from bench.data.sources import generator, get
from bench.workloads import gpt

model, optimizer = build("cpu", "shakespeare-tiny", 0, 1e-3)
text, context = get("shakespeare"), gpt.PRESETS["shakespeare-tiny"].context
gen = generator("cpu", 0)
batches = [text.train_batch(4, context, gen, "cpu") for _ in range(50)]


def step(x, y) -> None:
    gpt.loss(model(x), y).backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


out = Path(tempfile.mkdtemp()) / "probe_run"
probe = bench.probe(model, optimizer, census=False, every=10**9, warmup=0, time_every=10, out=out)
collections: dict[int, list[float]] = {}
started = [0.0]


def on_gc(phase: str, info: dict) -> None:
    if phase == "start":
        started[0] = time.perf_counter()
    else:
        collections.setdefault(info["generation"], []).append(time.perf_counter() - started[0])


def run(probed: bool, steps: int) -> None:
    probe.attach() if probed else probe.detach()
    for k in range(steps):
        x, y = batches[k % len(batches)]
        if probed:
            with probe.step():
                step(x, y)
        else:
            step(x, y)


gc.callbacks.append(on_gc)
for probed in (False, True):
    collections.clear()
    run(probed, 200)
    gcs = {g: (len(t), round(sum(t) * 1e3, 3)) for g, t in sorted(collections.items())}
    profile = cProfile.Profile()
    profile.enable()
    run(probed, len(batches))
    profile.disable()
    calls = pstats.Stats(profile).total_calls / len(batches)
    side = "with the probe" if probed else "without"
    print(f"{side}: {calls:.1f} Python calls a step; collections in 200 steps {gcs}")
probe.close()
