"""What the probe costs a real loop: the plain loop of `plain_loop.py` (ampbench's GPT at
nanoGPT's `shakespeare-char` size on a GPU, its tiny twin on the CPU) timed in interleaved
windows with the probe (census off) and without it (its hooks removed), and the census's own
cost on the same gradients.

    python examples/own_loop/overhead.py --rounds 10 --window 50 --out runs/overhead

Each window is `--window` steps between two clock marks, with one synchronize after it (CUDA
events on a GPU); rounds alternate which side runs first. The two windows of a round run back to
back, so the estimate is paired: the probed window's per-step time over the bare one's of the
same round, their geometric mean over the rounds and its interval (`paired_ratio`); the rounds
verdict `compare` gives (rounds taken as independent) is beside it. The overhead is at most
`--budget` where the interval's top is. Writes overhead.json and overhead.md under --out, and the
probe's own run folder (its probed steps, with its report.md and figures) in --out/probe_run.
`--report overhead.json` writes overhead.md again from a saved run's numbers.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch

import bench
from bench.data.sources import generator, get
from bench.measure.timing import clock_for
from bench.modes.mode import MODES
from bench.ownloop import census
from bench.publish import render as report
from bench.verdicts.defaults import CONFIDENCE
from bench.verdicts.rounds import paired_ratio, rounds_verdict
from bench.workloads import gpt

try:
    from plain_loop import build  # run as a script: its folder is on the path
except ImportError:  # imported as examples.own_loop.overhead
    from examples.own_loop.plain_loop import build


BUDGET = 0.01
"""The overhead the probe may cost a step, census off."""


def main() -> None:
    cuda = torch.cuda.is_available()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="shakespeare-char" if cuda else "shakespeare-tiny")
    p.add_argument("--batch-size", type=int, default=64 if cuda else 4)
    p.add_argument("--mode", default="bf16-amp" if cuda else "fp32")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--window", type=int, default=50, help="steps per timed window")
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument(
        "--time-every", type=int, default=1, help="the probe times one step in this many"
    )
    side = p.add_mutually_exclusive_group()
    side.add_argument(
        "--control",
        action="store_true",
        help="an A/A check of the windows: the 'probed' side runs without the probe too",
    )
    side.add_argument(
        "--hooks-only",
        action="store_true",
        help="the probed side keeps the probe's hooks on but runs no probe.step(): the hooks' "
        "share of the cost",
    )
    p.add_argument("--censuses", type=int, default=5, help="census calls timed on their own")
    p.add_argument("--budget", type=float, default=BUDGET, help="overhead allowed, 0.01 = 1%%")
    p.add_argument("--out", help="the folder to write (required unless --report)")
    p.add_argument("--report", type=Path, help="write overhead.md again from this overhead.json")
    a = p.parse_args()
    if a.report is not None:
        result = json.loads(a.report.read_text())
        text = render(result, a.budget)
        (a.report.parent / "overhead.md").write_text(text)
        print(text)
        return
    if a.out is None:
        p.error("--out is required")
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
        time_every=a.time_every, out=out / "probe_run",
    )  # fmt: skip
    host = HostTime(probe)
    clock = clock_for(device)
    collector = GcTime()
    # Per window, beside its clock's time: how long the host took to issue its steps (on a GPU,
    # a loop whose issue time is its step time waits on the host, where every host microsecond
    # the probe adds shows), and the garbage collector's time inside it.
    issue_ms: dict[bool, list[float]] = {False: [], True: []}
    gc_ms: dict[bool, list[float]] = {False: [], True: []}

    def window(side: bool) -> float:
        probed = side and not a.control
        if probed:
            probe.attach()
        else:
            probe.detach()
        collector.seconds = 0.0
        began = time.perf_counter()
        start = clock.mark()
        for x, y in batches:
            if probed and not a.hooks_only:
                with probe.step():
                    step(x, y)
            else:
                step(x, y)
        end = clock.mark()
        issued = time.perf_counter() - began
        clock.finish()  # the one synchronize, after the window
        issue_ms[side].append(issued * 1e3 / len(batches))
        gc_ms[side].append(collector.seconds * 1e3)
        return clock.elapsed_ms(start, end) / len(batches)

    for _ in range(max(1, a.warmup // a.window)):
        window(False)
        window(True)
    for side in issue_ms:
        issue_ms[side].clear()
        gc_ms[side].clear()
    bare, probed, host_us = [], [], []
    for k in range(a.rounds):
        for side in (False, True) if k % 2 == 0 else (True, False):
            host.seconds = 0.0
            (probed if side else bare).append(window(side))
            if side and not a.control:
                host_us.append(host.seconds / len(batches) * 1e6)
    probe.close()

    # The census on the same model's gradients, after a backward: its own time each call.
    x, y = batches[0]
    with mode.context(device, forward=True):
        loss = gpt.loss(model(x), y)
    loss.backward()
    census_ms = [census.take(model, 0)[1] for _ in range(a.censuses)]
    result = {
        "device": torch.cuda.get_device_name() if cuda else "cpu", "preset": a.preset,
        "batch_size": a.batch_size, "mode": a.mode, "rounds": a.rounds, "window_steps": a.window,
        "time_every": a.time_every, "control": a.control, "hooks_only": a.hooks_only,
        "bare_step_ms": bare, "probed_step_ms": probed, "census_ms": census_ms,
        "probe_host_us_per_step": host_us,
        "bare_issue_ms": issue_ms[False], "probed_issue_ms": issue_ms[True],
        "bare_gc_ms": gc_ms[False], "probed_gc_ms": gc_ms[True],
    }  # fmt: skip
    text = render(result, a.budget)
    (out / "overhead.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / "overhead.md").write_text(text)
    # The probe's folder is a timing folder: its report and figures, as `ampbench report` writes
    # them, after every window (matplotlib never runs between two).
    report.render(Path(probe.folder))
    print(text)


class HostTime:
    """The host time spent in the probe's own code each step: its step's begin and end and the
    hooks it puts on the model and the optimizer, timed by wrapping them on this probe (the hooks
    are looked up when `attach` registers them, so it is re-attached). Where a loop's step waits
    on the host (kernel launches), this is what the probe adds to the step; where the GPU is the
    bottleneck, the GPU's queue hides it."""

    CALLS = ("begin_step", "end_step", "_fwd_pre", "_fwd_post", "_opt_pre", "_opt_post")

    def __init__(self, probe: object) -> None:
        self.seconds = 0.0
        probe.detach()
        for name in self.CALLS:
            setattr(probe, name, self._timed(getattr(probe, name)))
        probe.attach()

    def _timed(self, fn: Callable) -> Callable:
        def timed(*args: object, **kwargs: object) -> object:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start

        return timed


class GcTime:
    """The garbage collector's time, summed from its start and stop callbacks."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._began = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._began


def render(result: dict, budget: float) -> str:
    """overhead.md from the windows' times and the census's (a saved overhead.json's too)."""
    bare, probed = result["bare_step_ms"], result["probed_step_ms"]
    paired = paired_ratio(bare, probed)
    verdict = rounds_verdict(bare, probed)
    top = paired["ratio_hi"] - 1
    if top <= budget:
        word = f"at most {budget:.0%}: the interval's top is +{top:.2%}"
    elif paired["ratio_lo"] - 1 > budget:
        word = f"more than {budget:.0%}: the interval's bottom is {paired['ratio_lo'] - 1:+.2%}"
    else:
        word = (
            f"not shown to be at most {budget:.0%}: the interval reaches {top:+.2%}; more "
            "rounds, or quieter windows, would narrow it"
        )
    step_ms = statistics.median(bare)
    census = statistics.median(result["census_ms"])
    lines = [
        f"# The probe's overhead on {result['device']}: {result['preset']}, batch "
        f"{result['batch_size']}, {result['mode']}",
        "",
        f"{result['rounds']} rounds of {result['window_steps']} steps a side, interleaved; "
        "census off"
        + (
            f"; the probe times one step in {every}."
            if (every := result.get("time_every", 1)) > 1
            else "; the probe times every step."
        ),
        *(
            ["", "**A/A control**: the side called 'with the probe' below ran without it too."]
            if result.get("control")
            else []
        ),
        *(
            [
                "",
                "**Hooks only**: the side with the probe had its hooks on the model and the "
                "optimizer, and no `probe.step()` around its steps.",
            ]
            if result.get("hooks_only")
            else []
        ),
        "",
        f"- step without the probe: {step_ms:.4g} ms (median of the windows)",
        f"- with the probe over without, paired by round: {paired['ratio']:.4g}, "
        f"{paired['confidence']:.0%} interval [{paired['ratio_lo']:.4g}, "
        f"{paired['ratio_hi']:.4g}]: {word}",
        f"- the same as independent rounds (the rounds verdict): {verdict['ratio']:.4g}, "
        + (
            f"{CONFIDENCE:.0%} interval [{verdict['ratio_lo']:.4g}, {verdict['ratio_hi']:.4g}]"
            if not verdict["too_few"]
            else "too few rounds for an interval"
        )
        + f": {verdict['verdict']}",
        *(
            [
                f"- the probe's own host time: {statistics.median(host):.4g} µs a step (median "
                f"of the probed windows), {statistics.median(host) / 1e3 / step_ms:.3%} of the "
                "bare step: what it adds where the step waits on the host, hidden where the GPU "
                "is the bottleneck"
            ]
            if (host := result.get("probe_host_us_per_step"))
            else []
        ),
        *_issue_lines(result),
        f"- one census of every gradient: {census:.4g} ms, {census / step_ms:.4g} steps' time; "
        f"every 200 steps that is {census / step_ms / 200:.3%} of the run",
        "",
    ]
    return "\n".join(lines)


def _issue_lines(result: dict) -> list[str]:
    """How far the GPU ran behind the host at a window's end, and the collector's time, per side
    (a run saved before they were kept has neither)."""
    if not result.get("bare_issue_ms"):
        return []
    med, steps = statistics.median, result["window_steps"]

    def lag(side: str) -> float:
        # The GPU's time left after the host issued the window's last step, ms: about 0 where
        # the step waits on the host; where the GPU bounds it, the host runs ahead until the
        # launch queue is full, and the queue's steps are left.
        step, issue = result[f"{side}_step_ms"], result[f"{side}_issue_ms"]
        return med([(s - i) * steps for s, i in zip(step, issue, strict=True)])

    bare, probed = lag("bare"), lag("probed")
    step_ms = med(result["bare_step_ms"])
    gc_bare, gc_probed = result["bare_gc_ms"], result["probed_gc_ms"]
    return [
        f"- the GPU's time left when the host had issued a window's last step (median): "
        f"{bare:.3g} ms ({bare / step_ms:.2g} steps) without the probe, {probed:.3g} ms with it; "
        "about 0 where the step waits on the host (every microsecond the host spends shows), a "
        "few steps' worth where the GPU bounds it (its queue hides the host's time)",
        f"- the garbage collector inside a window: median {med(gc_bare):.3g} ms without the probe "
        f"and {med(gc_probed):.3g} ms with it, at most {max(gc_bare):.3g} and "
        f"{max(gc_probed):.3g} ms",
    ]


if __name__ == "__main__":
    main()
