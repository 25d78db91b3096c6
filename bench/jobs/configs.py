"""A new job's config from the options a user gave, with what only the registries know filled in
(the workload's default preset, sizes and batch sizes, the modes the CPU can run), and the refusal
of a grid of which no case can run here. The configs themselves are torch-free (`bench.cases`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from bench.cases import checks
from bench.cases.case import swept
from bench.cases.grid import DEFAULT_MIN_REPEATS, DEFAULT_REPEATS, RunConfig, new_run_default
from bench.cases.maxbatch import CPU_DEFAULTS, MaxBatchConfig
from bench.cases.sizes import Sizes
from bench.ground import cards, catalog
from bench.modes.mode import MODES
from bench.plan.plan import resolve
from bench.workloads import registry
from bench.workloads.base import Workload

_FALLBACK = {"parallel": ("none",), "variant": ("eager",), "mode": (catalog.reference(),)}
"""The axes that can leave nothing to run, each with a value that runs anywhere: the axis whose
values, swapped for this, would let a case run is the one a refusal names."""


def run_config(*, device: str, preset: str | None, **given: object) -> RunConfig:
    """A new timing run's grid from the options the user gave (None: not given) and the
    defaults. Each axis's values are given by its plural name (`modes=...`); `sizes`, size name
    -> value, override the preset's where the workload's sizes are free (the MLP's). A grid of
    which no case can run here is refused (`nothing_runs`)."""
    chosen = {k: v for k, v in given.items() if v is not None}
    model = str(chosen.pop("model", cards.DEFAULT))
    workload, preset = _workload(model, preset, device)
    chosen["sizes"] = sized(workload, model, preset, chosen.pop("sizes", {}))
    # --repeats alone is a count the user asked for: every case gets that many windows.
    chosen.setdefault("min_repeats", chosen.get("repeats", DEFAULT_MIN_REPEATS))
    chosen.setdefault("repeats", DEFAULT_REPEATS)
    if device == "cpu" and not workload.cpu_overhead:
        # A model's CPU step takes tens of milliseconds, where the harness's microseconds a
        # step do not show, and the check (hundreds of steps a case) would take minutes of a
        # smoke run; the MLP's tiny step is where the CPU can see them.
        chosen.setdefault("overhead", False)
    world_size = int(chosen.get("world_size", 1))
    axes = {}
    for name, how in swept().items():
        values = chosen.pop(how.plural, None)
        if not values and name == "batch_size":
            values = workload.batch_sizes.get(device)  # a zoo model's own, else the MLP's
        full = bool(chosen.get("full"))
        axes[name] = tuple(values or new_run_default(name, device, world_size, full=full))
    if device == "cpu" and given.get("modes") is None:
        # A CPU smoke run's default grid holds the modes that can run on the CPU: the others
        # would be a row per batch size and optimizer saying the same thing (a third of the
        # grid). They are named in the log and the report instead; --modes asks for them.
        modes = catalog.default_modes(full=bool(chosen.get("full")))
        why = {name: MODES[name].unsupported_reason(device) for name in modes}
        axes["mode"] = tuple(name for name, reason in why.items() if reason is None)
        chosen["left_out"] = {name: reason for name, reason in why.items() if reason}
    cfg = RunConfig(device=device, preset=preset, model=model, axes=axes, **chosen)
    refusal = nothing_runs(cfg)
    if refusal is not None:
        raise ValueError(refusal)
    return cfg


def _workload(model: str, preset: str | None, device: str) -> tuple[Workload, str]:
    """The job's workload and its preset (the workload's default for `device` where none is
    given), each checked. A user's factory is imported here: its errors are one line."""
    checks.MODEL("--model", model)
    workload = registry.get(model)
    preset = preset or workload.default_preset[device]
    checks.choice(tuple(workload.presets))("--preset", preset)
    return workload, preset


def sized(workload: Workload, model: str, preset: str, given: Mapping[str, int]) -> Sizes:
    """The sizes of a new job's cases: the preset's, with those the user `given` (size name ->
    value) in their place, where the workload's sizes are free. A size given to a workload that
    does not take it, or one it does not have, is refused in one line naming the option."""
    own = workload.sizes(preset)
    for name, value in given.items():
        found = cards.option_of(name)
        flag = found[1] if found else f"size {name}"
        if not workload.free_sizes:
            raise ValueError(
                f"{flag} {value}: --model {model} takes no sizes of its own; its "
                f"{', '.join(own.names)} are its preset's (--preset)"
            )
        if name not in own.names:
            raise ValueError(f"{flag} {value}: {model}'s sizes are {', '.join(own.names)}")
        checks.POSITIVE_INT(flag, value)
    return Sizes.of({**own.named(), **given})


def nothing_runs(cfg: RunConfig) -> str | None:
    """None when some case of the grid can run here. Otherwise one line that names the option
    and value that leave nothing to run, and why (`--variants cudagraph: CUDA graphs need a
    CUDA device`): a new run of such a grid is refused before it makes a folder of
    `unsupported` rows."""
    reason = _first_unsupported(cfg)
    if reason is None:
        return None
    axes = swept()
    for name in ("parallel", "variant", "mode"):
        fallback = dataclasses.replace(cfg, axes={**cfg.axes, name: _FALLBACK[name]})
        if _first_unsupported(fallback) is None:
            value = ",".join(cfg.axes[name])
            return f"{axes[name].flag} {value}: {reason}; no case of this grid can run here"
    return f"no case of this grid can run here: {reason}"


def _first_unsupported(cfg: RunConfig) -> str | None:
    """None when some case of `cfg` can run here, else the first case's reason. A reason depends
    on the mode, the variant and the parallelism alone: each such triple is asked once."""
    reasons: dict[tuple[str, str, str], str | None] = {}
    for case in cfg.cases():
        key = (case.mode, case.variant, case.parallel)
        if key not in reasons:
            reasons[key] = resolve(case).unsupported_in(cfg.world_size)
            if reasons[key] is None:
                return None
    return next(iter(reasons.values()), None)


def maxbatch_config(*, device: str, preset: str | None, **given: object) -> MaxBatchConfig:
    """A largest-batch search from the options the user gave and the defaults of `device`; its
    preset is checked against the workload's own (a zoo model's or a user's too)."""
    defaults = CPU_DEFAULTS if device == "cpu" else {}
    model = str(given.pop("model", None) or cards.DEFAULT)
    _, preset = _workload(model, preset, device)
    return MaxBatchConfig(device=device, preset=preset, model=model, **{**defaults, **given})
