"""A pytest plugin for the tests of the pytest-benchmark suite (`-p tests.overflows`): it makes
GradScaler skip chosen updates, as a float16 overflow does, with an inf in a gradient just before
the update. `AMPBENCH_TEST_OVERFLOWS=FIRST,EVERY`: counting the updates of the session from 0,
the first that overflows and the period after it (0: every update from FIRST on)."""

from __future__ import annotations

import os

from bench.plan import step

_update = step.optimizer_update
_calls = [0]
FIRST, EVERY = (int(v) for v in os.environ.get("AMPBENCH_TEST_OVERFLOWS", "-1,0").split(","))


def _overflowing(s: step.TrainState) -> None:
    n = _calls[0]
    _calls[0] += 1
    if 0 <= FIRST <= n and (EVERY == 0 or (n - FIRST) % EVERY == 0):
        grad = next(p.grad for p in s.model.parameters() if p.grad is not None)
        grad.view(-1)[0] = float("inf")
    _update(s)


# train_step and optimizer_step look the update up in their module at each call.
step.optimizer_update = _overflowing
