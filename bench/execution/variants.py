"""Execution variants as data: how the one train step runs (eager, `torch.compile`, CUDA graphs:
docs/variants.md). `prepare` turns a train state into the timed phases; compilation and capture
happen there (`prepare_s`), never inside the timed steps."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from bench.plan.step import TrainState, backward, forward, optimizer_step, optimizer_update


@dataclass
class Prepared:
    """A train state made ready to time under one variant."""

    phases: dict[str, Callable[[], None]]
    """What the timing function runs, in order: fwd, bwd, step; or `graph` for a fused step."""
    losses: list[torch.Tensor] = field(default_factory=list)
    """Every step's loss, kept on the device (no sync) to be checked after the window."""
    prepare_s: float = 0.0
    """Host seconds spent compiling or capturing (and the warm-up steps that did it)."""
    eager_parts: str = ""
    """What of the step runs outside the graph, where the variant captures only part of it."""
    compiled_graphs: Callable[[], int] = lambda: 0
    """Graphs compiled so far in this process: unchanged over the timed window, or the row is
    flagged as recompiled."""


def _unique_graphs() -> int:
    from torch._dynamo.utils import counters  # dynamo's own count of compiled graphs

    return int(counters["stats"]["unique_graphs"])


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _phases(s: TrainState, losses: list[torch.Tensor], graphs: bool) -> dict[str, Callable]:
    """The train step cut at its phase boundaries. The loss passes from forward to backward
    through `carry`; every loss is kept as a device tensor (no sync). Where the loss lives in
    graph memory that the next replay overwrites, a copy is kept (one tiny kernel)."""
    carry: dict[str, torch.Tensor] = {}

    def fwd() -> None:
        if graphs:
            # cudagraph trees must be told where a step begins, or they keep earlier outputs.
            torch.compiler.cudagraph_mark_step_begin()
        _, loss = forward(s)
        carry["loss"] = loss
        losses.append(loss.detach().clone() if graphs else loss.detach())

    def bwd() -> None:
        backward(s, carry.pop("loss"))

    def step() -> None:
        optimizer_step(s)

    return {"fwd": fwd, "bwd": bwd, "step": step}


def _compiled(s: TrainState, mode: str) -> Prepared:
    # A fresh dynamo state per case: otherwise each case's new model adds guards to the same code
    # object until its cache limit sends later cases back to eager without a word. Inductor's
    # on-disk cache still spares recompiling what an earlier case compiled.
    torch._dynamo.reset()
    s.compute = torch.compile(s.compute, mode=mode)
    prepared = Prepared(phases={}, compiled_graphs=_unique_graphs)
    prepared.phases = _phases(s, prepared.losses, graphs=mode == "reduce-overhead")
    start = time.perf_counter()
    # Run whole steps until one compiles nothing new (at least two: reduce-overhead records its
    # graphs on the second and third call), so that timing starts after compilation.
    for i in range(10):
        before = _unique_graphs()
        for run in prepared.phases.values():
            run()
        _sync(s.case.device)
        if i >= 2 and _unique_graphs() == before:
            break
    prepared.prepare_s = time.perf_counter() - start
    prepared.losses.clear()
    return prepared


_CAPTURE_STREAMS: dict[int, torch.cuda.Stream] = {}


def _capture_stream() -> torch.cuda.Stream:
    """The one side stream of this process's captures on the current device. A new stream per
    capture would cost memory that outlives the case: cuBLAS keeps a workspace per stream that
    runs a matmul (32 MiB on an H200), which the caching allocator holds until the workspaces are
    cleared (`bench.measure.runner.free_device_memory`)."""
    device = torch.cuda.current_device()
    if device not in _CAPTURE_STREAMS:
        _CAPTURE_STREAMS[device] = torch.cuda.Stream(device)
    return _CAPTURE_STREAMS[device]


def _captured(s: TrainState) -> Prepared:
    s.autocast_cache = False
    # With GradScaler and a foreach Adam, scaler.step() reads found_inf on the host: that part
    # cannot be captured and runs after each replay.
    host_sync = s.mode.scale_loss and s.case.optimizer == "foreach"
    start = time.perf_counter()

    def captured_part() -> torch.Tensor:
        _, loss = forward(s)
        backward(s, loss)
        if not host_sync:
            optimizer_update(s)
        return loss

    side = _capture_stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up on a side stream, as the capture API asks
        for _ in range(3):
            s.optimizer.zero_grad(set_to_none=True)
            captured_part()
            if host_sync:
                optimizer_update(s)
    torch.cuda.current_stream().wait_stream(side)
    # Gradients must not exist at capture: backward then allocates them from the graph's pool,
    # and every replay writes them afresh (no zero_grad inside the graph).
    s.optimizer.zero_grad(set_to_none=True)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_loss = captured_part()
    torch.cuda.synchronize()
    prepared = Prepared(phases={}, prepare_s=time.perf_counter() - start)
    if host_sync:
        prepared.eager_parts = (
            "scaler.step, Adam and scaler.update run eagerly after each replay (GradScaler "
            "reads found_inf on the host before a foreach Adam step)"
        )

    def replay() -> None:
        graph.replay()
        if host_sync:
            optimizer_update(s)
        prepared.losses.append(static_loss.detach().clone())  # the next replay overwrites it

    prepared.phases = {"graph": replay}
    return prepared


def prepare(s: TrainState) -> Prepared:
    """The phases of the plan's variant over this state, compiled or captured already."""
    variant = s.plan.variant
    if variant.capture:
        return _captured(s)
    if variant.compile_mode is not None:
        return _compiled(s, variant.compile_mode)
    prepared = Prepared(phases={})
    prepared.phases = _phases(s, prepared.losses, graphs=False)
    return prepared
