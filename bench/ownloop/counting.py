"""The FLOPs of a user's step, counted once around the first step by `FlopCounterMode` (with
`bench.measure.flops.FORMULAS`) or handed in, split into forward and the rest; a counter that
cannot run leaves them uncounted, with the reason."""

from __future__ import annotations

import contextlib

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from bench.faults import error_summary
from bench.measure.flops import FORMULAS


class Counter:
    def __init__(self, given: int | None = None) -> None:
        if given is not None and (
            isinstance(given, bool) or not isinstance(given, int) or given < 1
        ):
            raise ValueError(f"flops={given!r}: give the FLOPs of one step, a positive integer")
        self.total: int | None = given
        self.fwd: int | None = None
        self.reason = "" if given is None else "handed in"
        self._mode: FlopCounterMode | None = None
        self._stack: contextlib.ExitStack | None = None
        self._fwd_start: int | None = None
        self._done = given is not None

    def wants(self, step: int) -> bool:
        return not self._done and step == 1

    def start(self, device: str) -> None:
        stack = contextlib.ExitStack()
        try:
            if device == "cpu":
                stack.enter_context(sdpa_kernel(SDPBackend.MATH))
            # The counted step of a compiled model runs eagerly, and says so to dynamo: under a
            # dispatch mode dynamo does not trace, and torch 2.11 (2.14 no longer) then marked the
            # forward's code never to be compiled, so every later step ran eager (nanoGPT's
            # compiled loop +42% on an H100, results/own-loop-h100/probe_cost_compiled).
            if hasattr(torch.compiler, "set_stance"):  # torch 2.6 and later
                stack.enter_context(torch.compiler.set_stance("force_eager"))
            self._mode = stack.enter_context(
                FlopCounterMode(display=False, custom_mapping=FORMULAS)
            )
        except Exception as exc:  # the step still runs; its FLOPs are said to be uncounted
            stack.close()
            self.reason = f"FLOPs not counted: {error_summary(exc)}"
            self._done = True
            return
        self._stack = stack

    def forward_begins(self) -> None:
        if self._mode is not None:
            self._fwd_start = self._mode.get_total_flops()

    def forward_ends(self) -> None:
        if self._mode is not None and self._fwd_start is not None:
            self.fwd = (self.fwd or 0) + self._mode.get_total_flops() - self._fwd_start
            self._fwd_start = None

    def stop(self) -> None:
        if self._stack is None:
            return
        total = self._mode.get_total_flops() if self._mode is not None else 0
        stack, self._stack, self._mode = self._stack, None, None
        try:
            stack.close()
        except Exception as exc:  # as in start: the count is lost, not the run
            self.reason = f"FLOPs not counted: {error_summary(exc)}"
            self.fwd = None
        else:
            self.total = total
        self._done = True
